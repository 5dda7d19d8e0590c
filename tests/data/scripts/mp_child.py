"""A parent that trains nothing and one child started with multiprocessing's spawn method that
trains 3 steps: the child runs the start-up hook again and gets its own capture folder."""

import multiprocessing as mp
import os


def child():
    import torch
    import torch_xla

    device = torch_xla.device()
    w = torch.ones(4, 4).to(device)
    for _ in range(3):
        w = w * 0.5 + 1
        torch_xla.sync()
    print("child", os.getpid(), "flags", os.environ.get("XLA_FLAGS"), flush=True)


if __name__ == "__main__":
    import torch_xla  # noqa: F401  the parent imports torch_xla too, and must not share its folder

    p = mp.get_context("spawn").Process(target=child)
    p.start()
    p.join()
    print("parent", os.getpid(), "child exit", p.exitcode, flush=True)
