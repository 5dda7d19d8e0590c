"""A tiny stable loop of STEPS steps: one graph after warm-up (capture size vs number of steps)."""

import sys

import torch
import torch_xla

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 10

device = torch_xla.device()
w = torch.ones(8, 8).to(device)
for _ in range(STEPS):
    w = torch.tanh(w @ w * 0.1 + 1)
    torch_xla.sync()
print("done", STEPS)
