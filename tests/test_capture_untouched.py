"""The capture must not change the user's graphs: its live-tensor walk asks torch_xla for tensor ids,
and asked of a functionalization wrapper whose base was updated in place (a gradient view after
`clip_grad_norm_`), torch_xla syncs the view first, giving it an IR node at the capture's own line
and the next graph an output more. A real torch_xla run, with and without capture: the same graphs."""

from __future__ import annotations

import lzma
import re
import subprocess
import sys
from pathlib import Path

from tests.test_capture import clean_env

SCRIPT = """
import torch, torch_xla
torch_xla.experimental.eager_mode(True)
torch.manual_seed(0)
dev = torch_xla.device()
model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

def step_fn(x, y):
    loss = torch.nn.functional.mse_loss(model(x).squeeze(-1), y)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss

step = torch_xla.compile(step_fn)
for i in range(4):
    loss = step(torch.randn(8, 6).to(dev), torch.randn(8).to(dev))
    print(i, loss.item())
"""


def _modules(folder: Path) -> list[str]:
    """The compiled step's modules: name and instruction count (torch_xla numbers the root)."""
    names = [p.name for p in folder.rglob("*step_fn*before_optimizations.txt*")]
    return sorted(re.sub(r"^module_\d+\.", "", n).split(".before")[0] for n in names)


def test_a_captured_run_compiles_the_graphs_an_uncaptured_run_compiles(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    dump = tmp_path / "dump"
    for env in ({"XLAGRAPH_CAPTURE": str(tmp_path / "cap")}, {"XLA_FLAGS": f"--xla_dump_to={dump}"}):
        proc = subprocess.run(
            [sys.executable, str(script)], env=clean_env(**env), cwd=tmp_path, capture_output=True, text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
    captured = _modules(tmp_path / "cap")
    assert captured and captured == _modules(dump)
    for f in (tmp_path / "cap").rglob("*.txt.xz"):
        assert "xlagraph/capture" not in lzma.decompress(f.read_bytes()).decode(), f.name
