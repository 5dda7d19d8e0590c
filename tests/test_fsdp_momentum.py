"""An FSDP warm-up read as a Python value in a `get-tuple-element` index (issue 37; held_out_49
kestrel), on real torch_xla 2.9 captures with one CPU device and SGD momentum:

* h49_kestrel_fsdp_last_batch (the corpus's scored round): a two-layer MLP, the last batch ragged;
* fsdp_momentum/momentum_warmup (its generate.py): another model (three layers, a LayerNorm).

The second step compiles again because SGD's momentum buffers exist from then on (`state_init`,
expected). On the first step each buffer is the gradient itself, an output the graph already
returns; from the second on it is a new `add`, written before its parameter's update. Both graphs
return as many outputs, so the updates keep their slots: paired in order instead, the new buffers
took the updates' places and top-down then paired the parameters' `get-tuple-element`s crosswise,
a swapped index reported as a Python value (`attribute`). A tuple index is never a Python value.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose import CauseKind
from xlagraph.diff import canonical_of
from xlagraph.match import Matching, match
from xlagraph.parse.sources import load_module
from xlagraph.report import build_report, load_runs
from xlagraph.report.model import RunReport

CAPTURES = {
    "kestrel": FIXTURES / "torch_xla" / "corpus" / "captures" / "h49_kestrel_fsdp_last_batch",
    "momentum_warmup": FIXTURES / "torch_xla" / "fsdp_momentum" / "momentum_warmup_capture",
}


def _process(name: str) -> Path:
    folder = CAPTURES[name]
    if not folder.is_dir():
        pytest.fail(f"missing {folder}: run fixtures/torch_xla/fsdp_momentum/generate.py")
    return folder if (folder / "journal.jsonl").is_file() else next(folder.iterdir())


@cache
def _report(name: str) -> RunReport:
    (log,) = load_runs(str(_process(name)))
    return build_report(log)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_the_second_step_is_the_momentum_warm_up_and_nothing_else(name: str) -> None:
    report = _report(name)
    (c,) = [r for r in report.recompiles if r.variant == "C"]
    assert (c.step, c.baseline.variant if c.baseline else None) == (2, "B")
    assert [x.kind for x in c.causes] == [CauseKind.STATE_INIT] and c.expected, c.causes
    every = [x for r in report.recompiles for x in r.causes]
    assert not [x for x in every if x.kind is CauseKind.ATTRIBUTE], every


def test_kestrel_still_names_its_ragged_last_batch() -> None:
    (d,) = [r for r in _report("kestrel").recompiles if r.variant == "D"]
    assert d.step == 8 and [x.kind for x in d.causes] == [CauseKind.PARAMETER_SHAPE]


def _matched(name: str) -> tuple[CanonicalComputation, CanonicalComputation, Matching]:
    """Graphs B and C of the capture (the first and second step), matched."""
    b, c = (load_module(str(p)) for p in sorted((_process(name) / "hlo").glob("module_000[12]*")))
    left = canonical_of(b).computations[b.entry.name]
    right = canonical_of(c).computations[c.entry.name]
    return left, right, match(left, right)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_each_tuple_element_keeps_its_index(name: str) -> None:
    left, right, m = _matched(name)
    for a, z in m.left.items():
        ia, iz = left.instruction(a), right.instruction(z)
        if ia.opcode == iz.opcode == "get-tuple-element":
            assert ia.attribute("index") == iz.attribute("index"), (a, z)


def test_kestrel_updates_keep_their_output_slots() -> None:
    """Paired by the outputs phase in kestrel (in momentum_warmup the dataflow pairs them first)."""
    left, right, m = _matched("kestrel")
    assert len(left.outputs) == len(right.outputs)
    updates = [(i, o) for i, o in enumerate(left.outputs) if left.instruction(o).opcode == "add"]
    assert len(updates) == 4  # one per parameter
    assert [m.left.get(o) for _, o in updates] == [right.outputs[i] for i, _ in updates]
