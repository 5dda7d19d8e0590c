"""A gradient norm kept alive (appended to a history list) on every other step only."""

import torch
import torch_xla
from _common import report_compiles, setup

device, model, optimizer, loss_fn = setup()
inputs, targets = torch.randn(32, 8), torch.randn(32, 4)
history = []

for step in range(8):
    x = inputs[step * 4 : (step + 1) * 4].to(device)
    y = targets[step * 4 : (step + 1) * 4].to(device)
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    if step % 2 == 1:
        grad_norm = torch.stack([p.grad.norm() for p in model.parameters()]).norm()  # CAUSE
        history.append(grad_norm)
    optimizer.step()
    torch_xla.sync()

print("norms", [round(g.item(), 4) for g in history])
report_compiles()
