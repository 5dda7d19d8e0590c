"""A stable loop that runs until killed (or for at most MAX_SECONDS): the SIGKILL test's victim."""

import sys
import time

import torch
import torch.nn as nn
import torch_xla

MAX_SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0

device = torch_xla.device()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(4, 8).to(device)
start = time.monotonic()
while time.monotonic() - start < MAX_SECONDS:
    optimizer.zero_grad()
    model(x).pow(2).mean().backward()
    optimizer.step()
    torch_xla.sync()
    time.sleep(0.005)
