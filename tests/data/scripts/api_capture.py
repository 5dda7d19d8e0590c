"""The Python API: `with xlagraph.capture(DIR)` entered before torch_xla is imported (argv[2] ==
"early") or after it ran a graph (argv[2] == "late")."""

import sys

import xlagraph

directory, when = sys.argv[1], sys.argv[2]
if when == "late":
    import torch
    import torch_xla

    (torch.ones(2, device=torch_xla.device()) * 2).sum().item()

with xlagraph.capture(directory) as folder:
    import torch
    import torch_xla

    w = torch.ones(4, 4).to(torch_xla.device())
    for _ in range(3):
        w = w * 0.5 + 1
        torch_xla.sync()
print("folder", folder)
w = w * 2
torch_xla.sync()  # after the block: not captured
