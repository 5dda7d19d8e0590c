"""Issue 39: "has this paired instruction changed?" is decided twice. The views (text, JSON, HTML,
GraphML) read `diagnose.changed.paired_changed` over the raw matching; the diagnosis reads the
compiled walk (rust/src/diagnose/changes.rs `matched_walk`) over `Comparison.pair_left`. This test
runs both on every matched computation pair of every fixture pair (tests/data/fixture_pairs.txt)
and holds each disagreement to one of the three inputs the walk has and the views do not:

- `repaired`: the pair, or one of its operands, is paired otherwise in `pair_left` (the entry's
  parameters re-paired from evidence, `Comparison.repair_parameters`);
- `same_h1`: both compute the same subgraph (equal `h1`): the walk skips the pair, the views call
  it changed because its operands are paired with other, identical, instructions;
- `twins`: an operand is not paired with its counterpart but with a twin computing the same
  subgraph (`instructions.operands_agree`).

Any other disagreement fails. The counts of each (measured 2026-11-28 on main 1308e874: 57
computation pairs of 1945 disagree) are printed with `-s`."""

from __future__ import annotations

from collections import Counter

import pytest
from xlagraph._core import matched_walk

from tests.conftest import FIXTURE_PAIRS, pair_spec
from xlagraph.diagnose import raw_causes
from xlagraph.diagnose.changed import paired_changed
from xlagraph.diagnose.comparison import Comparison
from xlagraph.diagnose.instructions import operands_agree
from xlagraph.diff import diff_modules
from xlagraph.opcodes import COMMUTATIVE
from xlagraph.parse.sources import load_module

Pair = tuple[str, str]


def walk_changed(cmp: Comparison) -> set[Pair]:
    """The pairs the compiled walk finds changed (before it says how): every event and propagated
    pair, and the parameters whose shape changed (the walk records those without an event). Its
    two rare modes are off and no shape is explained by a dimension, so every change shows."""
    left, right = cmp.left, cmp.right

    def agree(a: str, b: str) -> bool:
        commutative = left.instruction(a).opcode in COMMUTATIVE
        return operands_agree(cmp, left.operands[a], right.operands[b], commutative)

    events, prop_l, prop_r = matched_walk(
        left.core, right.core, cmp.pair_left, agree, lambda sa, sb: False, False, False
    )
    out = {(a, b) for _, a, b in events} | set(zip(prop_l, prop_r, strict=True))
    params = {i.name for i in left.computation.instructions if i.opcode == "parameter"}
    for a in left.order:
        b = cmp.pair_left.get(a)
        if a in params and b is not None and left.keys[a] != right.keys[b]:
            out.add((a, b))
    return out


def views_changed(cmp: Comparison) -> set[Pair]:
    left, right, m = cmp.left, cmp.right, cmp.m
    return {
        (a, m.left[a]) for a in left.order if a in m.left and paired_changed(left, right, m, a, m.left[a])
    }


def why(cmp: Comparison, a: str, b: str) -> str:
    """Which of the walk's own inputs makes it answer otherwise for (a, b), or `unexplained`."""
    left, right, m, pl = cmp.left, cmp.right, cmp.m, cmp.pair_left
    if m.left.get(a) != pl.get(a) or any(m.left.get(x) != pl.get(x) for x in left.operands[a]):
        return "repaired"
    if left.h1[a] == right.h1[b]:
        return "same_h1"
    commutative = left.instruction(a).opcode in COMMUTATIVE
    if left.keys[a] == right.keys[b] and operands_agree(
        cmp, left.operands[a], right.operands[b], commutative
    ):
        return "twins"
    return "unexplained"


@pytest.mark.parametrize("batch", range(4))
def test_views_and_walk_differ_only_by_the_walks_inputs(batch: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    seen: Counter[str] = Counter()
    unexplained: list[tuple[str, str, str, Pair]] = []
    current: list[str] = [""]
    walk = raw_causes.matched_changes

    def compare(cmp: Comparison, dims: set[tuple[str, str]]) -> list[Pair]:
        w, v = walk_changed(cmp), views_changed(cmp)
        seen["computation pairs"] += 1
        seen["disagree"] += w != v
        for side, pairs in (("walk only", w - v), ("views only", v - w)):
            for a, b in sorted(pairs):
                reason = why(cmp, a, b)
                seen[f"{side}: {reason}"] += 1
                if reason == "unexplained":
                    unexplained.append((current[0], cmp.left.computation.name, side, (a, b)))
        return walk(cmp, dims)

    monkeypatch.setattr(raw_causes, "matched_changes", compare)
    for a, b in FIXTURE_PAIRS[batch::4]:
        current[0] = f"{a} {b}"
        diff_modules(load_module(pair_spec(a)), load_module(pair_spec(b)))
    print(dict(seen))
    assert seen["computation pairs"]
    assert not unexplained, unexplained[:10]
