"""A stable loop: one graph, compiled once, then replayed from the cache."""

import torch
import torch_xla
from _common import report_compiles, setup

device, model, optimizer, loss_fn = setup()
inputs, targets = torch.randn(32, 8), torch.randn(32, 4)

for step in range(8):
    x = inputs[step * 4 : (step + 1) * 4].to(device)
    y = targets[step * 4 : (step + 1) * 4].to(device)
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    torch_xla.sync()

print("loss", loss.item())
report_compiles()
