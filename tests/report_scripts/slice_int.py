"""A window of the features chosen by a Python int that alternates between 0 and 2."""

import torch
import torch_xla
from _common import report_compiles, setup

device, model, optimizer, loss_fn = setup(in_features=4)
inputs, targets = torch.randn(32, 8), torch.randn(32, 4)

for step in range(8):
    x = inputs[step * 4 : (step + 1) * 4].to(device)
    y = targets[step * 4 : (step + 1) * 4].to(device)
    start = 2 * (step % 2)
    window = x[:, start : start + 4]  # CAUSE
    optimizer.zero_grad()
    loss = loss_fn(model(window), y)
    loss.backward()
    optimizer.step()
    torch_xla.sync()

print("loss", loss.item())
report_compiles()
