"""A step with an op torch_xla runs on the CPU: nearest upsampling's backward
(aten::upsample_nearest2d_backward has no XLA lowering in torch_xla 2.9), as in a UNet decoder."""

import torch
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()
conv = torch.nn.Conv2d(2, 2, 3, padding=1).to(device)
opt = torch.optim.SGD(conv.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(1, 2, 4, 4).to(device)
    y = F.interpolate(conv(x), scale_factor=2.0)
    y.square().mean().backward()
    opt.step()
    opt.zero_grad()
    torch_xla.sync()
