"""Linear probing, then fine-tuning: for three steps only the head trains (the backbone's features
are computed under torch.no_grad()), then an SGD with momentum over the whole model replaces the
head's optimizer. The step gains the backbone's backward and updates once, at the switch: a new
phase, compiled once; its momentum buffers follow one step later."""

import torch
import torch_xla

torch.manual_seed(0)
dev = torch_xla.device()
backbone = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.GELU(), torch.nn.Linear(24, 24)).to(dev)
head = torch.nn.Linear(24, 5).to(dev)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
data, labels = torch.randn(8, 6, 12), torch.randint(0, 5, (8, 6))
for step in range(8):
    probing = step < 3
    if step == 3:  # WHEN
        opt = torch.optim.SGD([*backbone.parameters(), *head.parameters()], lr=0.01, momentum=0.9)  # NEW
    x = data[step].to(dev)
    if probing:
        with torch.no_grad():
            feats = backbone(x)
    else:
        feats = backbone(x)
    loss = torch.nn.functional.cross_entropy(head(feats), labels[step].to(dev))
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch_xla.sync()
print("done")
