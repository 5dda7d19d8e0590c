"""torch_xla.compile and MpDeviceLoader: the step markers torch_xla issues itself are hooked."""

import torch
import torch.nn as nn
import torch_xla
import torch_xla.distributed.parallel_loader as pl

device = torch_xla.device()
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def step_fn(x):
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    return loss


compiled = torch_xla.compile(step_fn)
for _ in range(3):
    compiled(torch.randn(8, 4).to(device))

data = [torch.randn(8, 4) for _ in range(3)]
for x in pl.MpDeviceLoader(torch.utils.data.DataLoader(data, batch_size=None), device):
    step_fn(x)
print("done")
