"""Adversarial training from step 3 on: a helper perturbs the batch along the sign of the loss's
gradient with respect to the input (which it marks `requires_grad_`), and the step trains on the
perturbed batch. The step's graph gains that work under the `if` that calls the helper; the input
marked requires_grad is data, not a parameter switched to training."""

import torch
import torch_xla


def perturb(model, x, y, eps):
    x = x.clone().requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    (grad,) = torch.autograd.grad(loss, x)
    return (x + eps * grad.sign()).detach()


torch.manual_seed(0)
dev = torch_xla.device()
model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data, labels = torch.randn(7, 8, 10), torch.randint(0, 4, (7, 8))
for step in range(7):
    x, y = data[step].to(dev), labels[step].to(dev)
    if step >= 3:  # WHEN
        x = perturb(model, x, y, 0.1)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch_xla.sync()
print("done")
