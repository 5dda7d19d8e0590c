"""Issue 37's square sizes: a size that moves on both axes of a square `[t, t]` is a sequence
length only by evidence. A `[B, B]` similarity of the batch's rows (a SimCLR-style contrastive
loss, lazy and under torch_xla.compile), pairwise distances with an `eye(B)` mask, or such a loss
on rows made on the device (no input changes size) follow the batch: a ragged last batch keeps
`parameter_shape.batch` and its drop_last fix, and no length is invented. A causal mask `[T, T]`
beside a batch that stays is a sequence length. All real captures
(fixtures/torch_xla/square_sizes/generate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlagraph.capture.reader import read_capture
from xlagraph.diagnose.fixes import fix_id
from xlagraph.diagnose.recompile import Recompile
from xlagraph.report.build import build_report

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "torch_xla" / "square_sizes"


def _to_fix(name: str) -> list[Recompile]:
    (proc,) = (HERE / f"{name}_capture").iterdir()
    report = build_report(read_capture(str(proc))[0])
    return [r for r in report.recompiles if not r.expected]


def _fixes(r: Recompile) -> list[str]:
    return [fix_id(c.hint) for c in r.causes if not c.info]


@pytest.mark.parametrize("name", ["simclr_ragged", "simclr_ragged_compiled", "pairwise_ragged"])
def test_a_batch_by_batch_matrix_of_a_ragged_batch_is_the_batch(name: str) -> None:
    (r,) = _to_fix(name)
    assert _fixes(r) == ["parameter_shape.batch"]
    assert "structure" not in [str(c.kind) for c in r.causes]
    if name != "simclr_ragged_compiled":  # the compiled step's inputs carry library lines only
        assert f"fixtures/torch_xla/square_sizes/{name}.py:14" in r.causes[0].sources


@pytest.mark.parametrize("name", ["simclr_device_rows", "simclr_item_ids"])
def test_no_length_is_invented_when_no_input_changed_size(name: str) -> None:
    """The ragged step's graph changes only its ops' sizes: a size passed as a Python int (the
    batch's `n`, cited where it is computed, or for the ids where it is first used: :20, a gap
    in the line, not the cause), never a sequence length."""
    (r,) = [r for r in _to_fix(name) if r.step == 2]
    assert _fixes(r) == ["attribute.size"]
    assert all("sequence" not in f for f in _fixes(r))
    assert "structure" not in [str(c.kind) for c in r.causes]
    line = 19 if name == "simclr_device_rows" else 20
    assert f"fixtures/torch_xla/square_sizes/{name}.py:{line}" in r.causes[0].sources


def test_a_causal_mask_beside_a_batch_that_stays_is_a_sequence_length() -> None:
    (r,) = _to_fix("causal_mask")
    assert _fixes(r) == ["parameter_shape.sequence"]
    assert "structure" not in [str(c.kind) for c in r.causes]
