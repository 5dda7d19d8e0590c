"""From step 2 on, `.item()` in the middle of the step forces an extra graph."""

import torch
import torch_xla
from _common import report_compiles, setup

device, model, optimizer, loss_fn = setup()
inputs, targets = torch.randn(32, 8), torch.randn(32, 4)

for step in range(6):
    x = inputs[step * 4 : (step + 1) * 4].to(device)
    y = targets[step * 4 : (step + 1) * 4].to(device)
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    if step >= 2 and loss.item() > 1e6:  # CAUSE
        continue
    loss.backward()
    optimizer.step()
    torch_xla.sync()

report_compiles()
