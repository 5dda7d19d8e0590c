"""Issue 39: "has this paired instruction changed?" is decided once, by the diagnosis: the compiled
walk (rust/src/diagnose/changes.rs `matched_walk`) over `Comparison.pair_left` (the matching with
the entry's parameters re-paired from evidence), kept per matched computation pair as
`ComputationPair.decided`. Text and JSON list what the causes name (`changed_instructions`); the
HTML page and GraphML mark `changed` what `decided` holds (`cause` where a cause names it) and
draw its pairs. On every fixture pair (tests/data/fixture_pairs.txt) this test holds:

- the walk's changed lists are its events, the pairs that follow a changed input and the inputs
  whose shape changed, nothing else;
- the HTML page's and GraphML's marks are `decided`'s;
- where the rule the views once had (tests/oracles/views_changed.py, over the raw matching)
  answers otherwise, it is for one of the inputs it lacked: `repaired` (the pair, or an operand,
  is paired otherwise in `pair_left`), `same_h1` (both compute the same subgraph: nothing
  changed there) or `twins` (an operand is paired with a twin of its counterpart computing the
  same subgraph, `instructions.operands_agree`).

The moved marks are printed with `-s` (2026-11-28, h-changed37: 55 of 1945 computation pairs,
332 marks of both sides)."""

from __future__ import annotations

from collections import Counter

import pytest

import xlagraph
from tests.conftest import FIXTURE_PAIRS, pair_spec
from tests.oracles.views_changed import matching_changed
from xlagraph.api._graphml import _statuses
from xlagraph.api._module import node_id
from xlagraph.diagnose import instructions, raw_causes
from xlagraph.diagnose.comparison import Comparison
from xlagraph.diff import ComputationPair, DiffResult
from xlagraph.render.html_common import CONTEXT_LINES
from xlagraph.render.html_diff import DATA_BUDGET, _DiffBuilder

Pair = tuple[str, str]


def html_marks(
    result: DiffResult, pair: ComputationPair
) -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    """The diff page's statuses of a compared pair, per side, and the names its causes mark."""
    builder = _DiffBuilder(result, CONTEXT_LINES, "", [DATA_BUDGET])
    st = builder.statuses(pair)
    return st.left, st.right, builder.named


def why_moved(pair: ComputationPair, result: DiffResult, a: str, b: str) -> str:
    """Which of the walk's inputs makes the old rule answer otherwise for (a, b): `same_h1` and
    `twins` only take a mark away."""
    d, m = pair.decided, pair.matching
    assert d is not None and m is not None
    lc, rc = result.left.computations[pair.left], result.right.computations[pair.right]
    if m.left.get(a) != d.left.get(a) or any(m.left.get(x) != d.left.get(x) for x in lc.operands[a]):
        return "repaired"
    if a in d.changed_left:
        return "unexplained"
    if lc.h1[a] == rc.h1[b]:
        return "same_h1"
    if lc.keys[a] == rc.keys[b]:
        return "twins"  # the walk found the operands agree: twins (paired ones are the same)
    return "unexplained"


@pytest.mark.parametrize("batch", range(4))
def test_every_view_shows_what_the_diagnosis_decided(batch: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    seen: Counter[str] = Counter()
    walked: list[tuple] = []
    wrong: list[tuple] = []
    walk, compare = instructions._matched_walk, raw_causes.matched_changes

    def record(*args):  # type: ignore[no-untyped-def]
        walked.append(found := walk(*args))
        return found

    def checked(cmp: Comparison, dims: set[Pair]) -> list[Pair]:
        out = compare(cmp, dims)
        events, prop_l, prop_r, cl, cr = walked.pop()
        changed = set(zip(cl, cr, strict=True))
        reported = {(a, b) for _, a, b in events} | set(zip(prop_l, prop_r, strict=True))
        extra = {(a, b) for a, b in changed - reported if a not in cmp.left.param_number}
        if not reported <= changed or extra or (frozenset(cl), frozenset(cr)) != cmp.changed:
            wrong.append(("walk", cmp.left.name, sorted(reported - changed)[:5], sorted(extra)[:5]))
        return out

    monkeypatch.setattr(instructions, "_matched_walk", record)
    monkeypatch.setattr(raw_causes, "matched_changes", checked)
    for a, b in FIXTURE_PAIRS[batch::4]:
        diff = xlagraph.diff(pair_spec(a), pair_spec(b))
        result = diff.result
        graphml = _statuses(diff)
        cause_ids = {"A": set(diff.changed_ids("A")), "B": set(diff.changed_ids("B"))}
        twice = Counter(p.left for p in result.pairs) | Counter(p.right for p in result.pairs)
        for pair in result.pairs:
            d = pair.decided
            if d is None:
                continue
            seen["computation pairs"] += 1
            lc, rc = result.left.computations[pair.left], result.right.computations[pair.right]
            html_l, html_r, named = html_marks(result, pair)
            for tag, comp, html, changed in (
                ("A", lc, html_l, d.changed_left),
                ("B", rc, html_r, d.changed_right),
            ):
                marked = {n for n, s in html.items() if s == "changed"}
                if marked != changed - named[tag]:
                    wrong.append(("html", a, comp.name, tag, sorted(marked ^ (changed - named[tag]))[:5]))
                if twice[comp.name] > 1:
                    continue  # GraphML keys a computation's nodes once, whichever pair it was in
                ids = {node_id(comp.name, n): n for n in comp.order}
                marked = {ids[k] for (t, k), s in graphml.items() if t == tag and s == "changed" and k in ids}
                want = {n for n in changed if node_id(comp.name, n) not in cause_ids[tag]}
                if marked != want:
                    wrong.append(("graphml", a, comp.name, tag, sorted(marked ^ want)[:5]))
            old = matching_changed(lc, rc, pair.matching)  # type: ignore[arg-type]
            old_l, old_r = {x for x, _ in old}, {y for _, y in old}
            seen["disagree"] += (old_l, old_r) != (d.changed_left, d.changed_right)
            seen["moved marks"] += len(old_l ^ d.changed_left) + len(old_r ^ d.changed_right)
            for x in old_l ^ d.changed_left:
                y = d.left[x] if x in d.changed_left else pair.matching.left[x]  # type: ignore[union-attr]
                reason = why_moved(pair, result, x, y)
                seen[f"{'now changed' if x in d.changed_left else 'now not'}: {reason}"] += 1
                if reason == "unexplained":
                    wrong.append(("moved", a, pair.left, x, y))
    print(dict(seen))
    assert seen["computation pairs"]
    assert not walked
    assert not wrong, wrong[:10]
