"""Shared by the report test scripts: a tiny MLP and torch_xla's own compile count."""

import torch
import torch.nn as nn
import torch_xla
import torch_xla.debug.metrics as met


def setup(in_features: int = 8, momentum: float = 0.0):
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(in_features, 16, bias=False), nn.ReLU(), nn.Linear(16, 4, bias=False)).to(
        device
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    return device, model, optimizer, nn.MSELoss()


def report_compiles() -> None:
    """Print torch_xla's CompileTime count so the test can compare it with the report."""
    data = met.metric_data("CompileTime")
    print("TORCH_XLA_COMPILES", data[0] if data else 0)
