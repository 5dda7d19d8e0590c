"""Ten samples in batches of four: the last batch of each epoch has two."""

import torch
import torch_xla
from _common import report_compiles, setup
from torch.utils.data import DataLoader, TensorDataset

device, model, optimizer, loss_fn = setup()
loader = DataLoader(TensorDataset(torch.randn(10, 8), torch.randn(10, 4)), batch_size=4)

for _epoch in range(2):
    for x, y in loader:
        x, y = x.to(device), y.to(device)  # CAUSE
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        torch_xla.sync()

print("loss", loss.item())
report_compiles()
