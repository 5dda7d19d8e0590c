"""Regenerate the real torch_xla text the capture parsers are tested on (torch_xla 2.9, CPU):

    python tests/data/make_capture_data.py

* tensors_report.txt / tensors_report.noframes.txt: `torch_xla._XLAC._xla_tensors_report(0, "")`
  taken before a sync of a tiny MLP step (a logged loss kept alive), with and without XLA_IR_DEBUG.
* pt_xla_debug.txt: PT_XLA_DEBUG_LEVEL=2 output of a loop with explicit syncs, an `.item()`
  in the middle of a step, `torch_xla.compile`, and a call stack deeper than
  PT_XLA_DEBUG_MAX_FRAME (8) so a frame list is cut.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def tensors_report(out: Path) -> None:
    import torch
    import torch.nn as nn
    import torch_xla

    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(3, 4).to(device)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    logged = loss.detach() * 2  # a small tensor kept alive only for logging
    out.write_text(torch_xla._XLAC._xla_tensors_report(0, ""))
    torch_xla.sync()
    del logged


def debug_output(out: Path) -> None:
    import torch
    import torch_xla

    device = torch_xla.device()
    w = torch.ones(4, 4).to(device)

    def deep(n: int) -> float:  # more frames than PT_XLA_DEBUG_MAX_FRAME
        return deep(n - 1) if n else (w * 3).sum().item()

    for step in range(3):
        w = w * 0.5 + 1
        if step == 2:
            w.sum().item()  # implicit sync in the middle of a step
        torch_xla.sync()
    deep(10)
    compiled = torch_xla.compile(lambda t: t @ t)
    compiled(w)
    compiled(w)
    torch_xla.sync()


def main() -> None:
    if len(sys.argv) > 2:
        {"tensors": tensors_report, "debug": debug_output}[sys.argv[1]](Path(sys.argv[2]))
        return
    base = {**os.environ, "PJRT_DEVICE": "CPU", "XLAGRAPH_CAPTURE": ""}
    debug_file = HERE / "pt_xla_debug.txt"
    debug_file.unlink(missing_ok=True)
    runs = [
        ("tensors", "tensors_report.txt", {"XLA_IR_DEBUG": "1"}),
        ("tensors", "tensors_report.noframes.txt", {"XLA_IR_DEBUG": "0"}),
        ("debug", "unused", {"PT_XLA_DEBUG_LEVEL": "2", "PT_XLA_DEBUG_FILE": str(debug_file)}),
    ]
    for what, name, env in runs:
        subprocess.run([sys.executable, __file__, what, str(HERE / name)], env={**base, **env}, check=True)
    for name in ("tensors_report.txt", "tensors_report.noframes.txt", "pt_xla_debug.txt"):
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
