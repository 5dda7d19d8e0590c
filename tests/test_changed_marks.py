"""The HTML page's and GraphML's marks where issue 39's switch moved them: one real fixture pair per
input the views' old rule lacked (tests/test_changed_parity.py has the counts). Each instruction
below was marked `changed` by the old rule (tests/oracles/views_changed.py, over the raw
matching) and is not changed as the diagnosis decides it: both views now show the diagnosis'
answer, on the instruction and on the whole diff."""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest

import xlagraph
from tests.conftest import FIXTURES
from tests.oracles.views_changed import matching_changed
from xlagraph.diagnose.changed import named_instructions
from xlagraph.diff import DiffResult
from xlagraph.render.html_diff import build_diff_view

T = FIXTURES / "torch_xla"

CASES = [
    # The matcher crossed the two inputs (w.1 f32[4,16] with B's x.1 f32[8,16]: the fusion
    # takes them in the other order); the parameters' evidence (number, name, shape) pairs w.1
    # with w.1, unchanged: what changed is the fusion's operand order, the cause's instruction.
    pytest.param(
        FIXTURES / "jax" / "wild3" / "compiled_vmap_vs_hand_batched" / "a.hlo",
        FIXTURES / "jax" / "wild3" / "compiled_vmap_vs_hand_batched" / "b.hlo",
        "main.2",
        ("w.1", "w.1", "x.1"),
        id="repaired",
    ),
    # Identical graphs (no cause): transpose.57 of B computes the same subgraph as A's
    # transpose.56, its operand being B's twin of A's transpose.4; the old rule called it rewired.
    pytest.param(
        T / "clean_loop" / "a.hlo",
        T / "clean_loop" / "b.hlo",
        "IrToHlo.90",
        ("transpose.56", "transpose.57"),
        id="same_h1",
    ),
    # multiply.559's broadcast operand is paired with a twin of multiply.393's (the same
    # broadcast of the same scalar, lowered once in A, twice in B): the operands agree.
    pytest.param(
        T / "parallel" / "pp_last_stage_b.hlo",
        T / "parallel" / "pp_last_stage_a.hlo",
        "IrToHlo.742",
        ("multiply.559", "multiply.393"),
        id="twins",
    ),
]


def html_statuses(result: DiffResult) -> dict[tuple[str, str, str], str]:
    """(side, computation, name) -> the status the diff page gives every row it holds or ships."""
    view = build_diff_view(result)
    out: dict[tuple[str, str, str], str] = {}
    for section in view.sections:
        for col in (section.left, section.right):
            if col is None:
                continue
            for block in col.blocks:
                rows: list[Any] = [block] if block.kind == "row" else list(block.rows)
                out.update(((col.side, col.computation, r.name), r.status) for r in rows)
                if block.kind == "run" and block.id in view.data:
                    shipped = view.data[block.id]["rows"]
                    out.update(((col.side, col.computation, r["n"]), r.get("st") or "same") for r in shipped)
    return out


@pytest.mark.parametrize(("a", "b", "computation", "names"), CASES)
def test_the_views_mark_what_the_diagnosis_decided(a, b, computation: str, names: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    diff = xlagraph.diff(str(a), str(b))
    result = diff.result
    pair = next(p for p in result.pairs if p.left == computation)
    d = pair.decided
    assert d is not None and pair.matching is not None
    x, y = names[0], names[1]
    old_partner = names[2] if len(names) > 2 else y
    lc, rc = result.left.computations[pair.left], result.right.computations[pair.right]
    assert (x, old_partner) in matching_changed(lc, rc, pair.matching), "the old rule marked it"
    assert d.left[x] == y and x not in d.changed_left and y not in d.changed_right

    html = html_statuses(result)
    assert html[("A", pair.left, x)] == "same" and html[("B", pair.right, y)] == "same"
    graph = nx.parse_graphml(diff.to_graphml(), force_multigraph=True)
    node = graph.nodes[f"A:{pair.left}/{x}"]
    assert node["status"] == "same" and node["counterpart"] == f"B:{pair.right}/{y}"
    assert graph.nodes[f"B:{pair.right}/{y}"]["status"] == "same"

    # On the whole pair: every `changed` mark of either view is the diagnosis' (a cause's
    # instructions are marked `cause` instead; the page holds the rows near a difference).
    named = named_instructions(result.causes)
    for tag, comp, changed in (("A", pair.left, d.changed_left), ("B", pair.right, d.changed_right)):
        want = changed - named[tag]
        shown = {n for (t, c, n), s in html.items() if (t, c) == (tag, comp) and s == "changed"}
        assert shown == want & {n for (t, c, n) in html if (t, c) == (tag, comp)}
        prefix = f"{tag}:{comp}/"
        marked = {
            k[len(prefix) :]
            for k, v in graph.nodes(data=True)
            if k.startswith(prefix) and v["status"] == "changed"
        }
        causes = set(diff.changed_ids(tag))  # GraphML's `cause` marks
        assert marked == {n for n in changed if f"{comp}/{n}" not in causes}
