"""Reordered updates whose operands differ in shape, on real torch_xla 2.9 graphs (issue 37):
fixtures/torch_xla/reorder_shapes, made by its generate.py. Running statistics created before the
loop (computed from constants by the first graph, read as inputs after) are updated in an order
that changes between steps: two means of one size over 4 and 16 values, four statistics (mean,
mean, max, norm), three of three sizes rotating, two flattened averages (the reshapes' sizes
differ), and the two means beside a baked constant or beside an output kept on even steps only.

Each recompile must be named as the reordering, with the mapping torch_xla's own metadata gives
(MANIFEST.json: each statistic is made on its own line), beside what else changed and nothing
else: the means' divisors and the reshapes' sizes move with their updates, so no constant_value
for them and no `structure`."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose import CauseKind
from xlagraph.diff import diff_files

HERE = FIXTURES / "torch_xla" / "reorder_shapes"
MANIFEST = json.loads((HERE / "MANIFEST.json").read_text())

_K = CauseKind
# What the graphs differ in besides the order: step 0 computes the statistics from constants.
_BESIDE: dict[str, dict[str, set[CauseKind]]] = {
    "two_means_constant": {"step0-step1": {_K.CONSTANT_VALUE}, "step1-step2": {_K.CONSTANT_VALUE}},
    "two_means_added": {"step0-step1": {_K.OUTPUT_REMOVED}, "step1-step2": {_K.OUTPUT_ADDED}},
}
_WARM_UP = {"step0-step1": {_K.STATE_INIT}, "step0-step2": {_K.STATE_INIT}, "step1-step2": set()}

CASES = [(name, pair) for name in sorted(MANIFEST) for pair in sorted(MANIFEST[name]["pairs"])]


@pytest.mark.parametrize(("name", "pair"), CASES, ids=[f"{n}:{p}" for n, p in CASES])
def test_reordered_updates_are_named_as_a_reordering(name: str, pair: str) -> None:
    a, b = pair.split("-")
    result = diff_files(str(HERE / name / f"{a}.hlo"), str(HERE / name / f"{b}.hlo"))
    kinds = {c.kind for c in result.causes}
    want_moves = {tuple(m) for m in MANIFEST[name]["pairs"][pair]["output_moves"]}
    want = _WARM_UP[pair] | _BESIDE.get(name, {}).get(pair, set())
    if want_moves:
        want.add(_K.OUTPUT_PERMUTATION)
    # Inputs move with the outputs where both graphs read the statistics: one cause says both.
    assert kinds == want, [c.summary for c in result.causes]
    moved = {
        (m.left, m.right)
        for c in result.causes
        for m in c.mapping
        if m.what == "output" and m.left != m.right
    }
    assert moved == want_moves
