"""Regenerate the real PyTorch/XLA dumps under tests/data/ that the CLI and render tests read.

    PJRT_DEVICE=CPU python tests/data/make_cli_data.py

Every file is written by torch_xla 2.9 on CPU; nothing is edited by hand except that the
`--xla_dump_to` directory is pruned to its `.txt` files (the `.o`, `.ll` and `.mlir` files are
compiler output xlagraph never reads). Each scenario runs in its own process because
`XLA_SAVE_TENSORS_FILE`, `XLA_SAVE_TENSORS_FMT` and `XLA_FLAGS` are read once at start-up.

Files:

- `train.hlo.txt`: `XLA_SAVE_TENSORS_FILE` dump (`XLA_SAVE_TENSORS_FMT=hlo`, `XLA_HLO_DEBUG=1`) of
  a 6-step MLP/SGD loop. Step 3 keeps a logging tensor alive (one more output); step 5 is a ragged
  last batch (batch 3 instead of 4). Steps 0-2 and 4 are the steady-state graph.
- `train_dump/`: the same loop's `--xla_dump_to` directory (the compiled modules only).
- `train.ir.txt`: the same loop saved as lazy IR text (`XLA_SAVE_TENSORS_FMT=text`, the default).
- `train.stablehlo.txt`: the first two steps saved with `XLA_SAVE_TENSORS_FMT=stablehlo`.
- `step.hlo`: one training step's graph from `torch_xla._XLAC._get_xla_tensors_hlo`.
- `step.noshapes.hlo`: `step.hlo` re-printed by XLA's own printer without operand shapes
  (jaxlib's HloModule round trip): the same graph in another printer variant.
- `step.hlo.pb`: the same graph as a serialized HloModuleProto (binary).
- `step.stablehlo.mlir`: the same graph as StableHLO text (`_get_stablehlo`).
- `step_b3.hlo`: the step with batch 3 (input shapes differ).
- `scale_1.hlo` / `scale_0.hlo`: `w * s` with s = 1.0 / 0.0, which PyTorch/XLA bakes as constants.
- `order_ab.hlo` / `order_ba.hlo`: two live tensors synced in either order (outputs permuted).
- `slice_3.hlo` / `slice_5.hlo`: `x[:, :k]` with a Python int k (slice bounds differ).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _mlp_loop(steps: int) -> None:
    import torch
    import torch_xla

    torch.manual_seed(0)
    device = torch_xla.device()
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, targets = torch.randn(23, 8), torch.randn(23, 4)
    kept = []
    for step in range(steps):
        x = inputs[step * 4 : (step + 1) * 4].to(device)  # step 5: rows 20..22, a batch of 3
        y = targets[step * 4 : (step + 1) * 4].to(device)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if step == 3:
            kept.append(loss * 2)  # debug logging keeps a tensor alive on this step only
        torch_xla.sync()
        kept.clear()


def scenario_train() -> None:
    _mlp_loop(6)


def scenario_train_short() -> None:
    _mlp_loop(2)


def _step_tensors(batch: int):
    import torch
    import torch_xla

    torch.manual_seed(0)
    device = torch_xla.device()
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(batch, 8).to(device), torch.randn(batch, 4).to(device)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return [loss, *model.parameters()]


def scenario_single() -> None:
    import torch
    import torch_xla

    hlo = torch_xla._XLAC._get_xla_tensors_hlo
    device = torch_xla.device()
    out = Path(os.environ["OUT"])

    tensors = _step_tensors(4)
    (out / "step.hlo").write_text(hlo(tensors))
    (out / "step.hlo.pb").write_bytes(torch_xla._XLAC._get_xla_tensors_hlo_proto(tensors))
    stablehlo = torch_xla._XLAC._get_stablehlo(tensors, str(device), [str(device)], False)
    (out / "step.stablehlo.mlir").write_text(
        stablehlo.decode() if isinstance(stablehlo, bytes) else stablehlo
    )
    (out / "step_b3.hlo").write_text(hlo(_step_tensors(3)))

    w = torch.randn(4, 8).to(device)
    for s in (1.0, 0.0):
        (out / f"scale_{int(s)}.hlo").write_text(hlo([(w * s).sum(0)]))

    x, y = torch.randn(4, 8).to(device), torch.randn(8, 4).to(device)
    a, b = (x * 3).sum(1), (y + 1).relu()
    (out / "order_ab.hlo").write_text(hlo([a, b]))
    (out / "order_ba.hlo").write_text(hlo([b, a]))

    for k in (3, 5):
        (out / f"slice_{k}.hlo").write_text(hlo([x[:, :k] * 2]))


def noshapes(out: Path) -> None:
    from jaxlib import _hlo

    options = _hlo.HloPrintOptions()
    options.print_operand_shape = False
    text = (out / "step.hlo").read_text()
    (out / "step.noshapes.hlo").write_text(_hlo.hlo_module_from_text(text).to_string(options))


def _run(name: str, env: dict[str, str]) -> None:
    full = {**os.environ, "PJRT_DEVICE": "CPU", "OUT": str(HERE), **env}
    subprocess.run([sys.executable, __file__, name], env=full, check=True)


def _take_save_file(prefix: Path, target: Path) -> None:
    """PyTorch/XLA appends the process ordinal (`.0`) to XLA_SAVE_TENSORS_FILE."""
    (matches,) = [p for p in prefix.parent.glob(prefix.name + "*") if p != target]
    matches.replace(target)


def main() -> None:
    tmp = HERE / "_tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    dump = HERE / "train_dump"
    shutil.rmtree(dump, ignore_errors=True)
    _run(
        "train",
        {
            "XLA_SAVE_TENSORS_FILE": str(tmp / "train.hlo"),
            "XLA_SAVE_TENSORS_FMT": "hlo",
            "XLA_HLO_DEBUG": "1",
            "XLA_FLAGS": f"--xla_dump_to={dump} --xla_dump_hlo_as_text",
        },
    )
    _take_save_file(tmp / "train.hlo", HERE / "train.hlo.txt")
    for p in dump.iterdir():
        if p.suffix != ".txt":
            p.unlink()
    _run("train", {"XLA_SAVE_TENSORS_FILE": str(tmp / "train.ir"), "XLA_SAVE_TENSORS_FMT": "text"})
    _take_save_file(tmp / "train.ir", HERE / "train.ir.txt")
    _run(
        "train_short",
        {"XLA_SAVE_TENSORS_FILE": str(tmp / "train.stablehlo"), "XLA_SAVE_TENSORS_FMT": "stablehlo"},
    )
    _take_save_file(tmp / "train.stablehlo", HERE / "train.stablehlo.txt")
    _run("single", {})
    noshapes(HERE)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        {"train": scenario_train, "train_short": scenario_train_short, "single": scenario_single}[
            sys.argv[1]
        ]()
    else:
        main()
