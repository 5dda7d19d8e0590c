"""xmp.spawn with nprocs=1 (runs in this process on CPU): capture records rank 0 in its folder."""

import torch
import torch_xla
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    device = torch_xla.device()
    w = torch.ones(4, 4).to(device)
    for _ in range(3):
        w = w * 0.5 + 1
        torch_xla.sync()
    print("rank", index, "sum", w.sum().item())


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(), nprocs=1)
