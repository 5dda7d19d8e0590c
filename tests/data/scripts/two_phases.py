"""Two phases in one process: a model pretrained (twice, as folds of a cross-validation would:
the same graphs, cached), then fine-tuned with a new head and an AdamW of its own. Each loop's
tensors are made on the device before it, with no sync: its first graph computes them. The
fine-tuning optimizer's buffers appear at its second step, late in the run: warm-up all the same."""

import torch
import torch_xla


def pretrain(seed: int, steps: int = 4) -> torch.nn.Module:
    torch.manual_seed(seed)
    dev = torch_xla.device()
    body = torch.nn.Sequential(torch.nn.Linear(12, 8), torch.nn.ReLU()).to(dev)
    head = torch.nn.Linear(8, 3).to(dev)
    opt = torch.optim.AdamW([*body.parameters(), *head.parameters()], lr=1e-3, weight_decay=0.1)
    x = torch.randn(8, 12, device=dev)
    y = torch.arange(8, device=dev) % 3
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(head(body(x)), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch_xla.sync()
    return body


def finetune(body: torch.nn.Module, steps: int = 4) -> None:
    dev = torch_xla.device()
    head = torch.nn.Linear(8, 5).to(dev)
    opt = torch.optim.AdamW([*body.parameters(), *head.parameters()], lr=1e-4)
    x = torch.rand(6, 12, device=dev)
    y = torch.arange(6, device=dev) % 5
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(head(body(x)), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch_xla.sync()


if __name__ == "__main__":
    pretrain(0)
    finetune(pretrain(1))
