"""GraphML of one graph, or of two graphs compared, for Gephi, yEd and other graph viewers (the
file's keys, attributes and each node's `status`: docs/api.md, "GraphML for Gephi and yEd"). Built from
`Module.to_networkx()` and written by networkx, imported here only; a diff's statuses are the
diagnosis's (`ComputationPair.decided`: the matcher's pairs with the entry's parameters re-paired
from evidence)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from xlagraph.api._module import Module, graphml_text, node_id

if TYPE_CHECKING:
    import networkx as nx

    from xlagraph.diff import DiffResult

__all__ = ["diff_graph", "diff_graphml"]


class Compared(Protocol):
    """A `Diff` (xlagraph.api._diff, which comes here for its GraphML: not imported back)."""

    left: Module
    right: Module
    result: DiffResult
    verdict: str


def diff_graph(diff: Compared) -> nx.MultiDiGraph:
    """Both graphs of `diff` in one `MultiDiGraph`, nodes keyed `A:<key>` / `B:<key>`, with
    `side`, `status` and `counterpart` on every node (see the module docstring)."""
    import networkx as nx

    out = nx.MultiDiGraph(name=f"{diff.left.label} vs {diff.right.label}", verdict=diff.verdict)
    status = _statuses(diff)
    counterparts = _counterparts(diff)
    for tag, module in (("A", diff.left), ("B", diff.right)):
        g = module.to_networkx()
        for n, attrs in g.nodes(data=True):
            other = counterparts.get((tag, n), "")
            out.add_node(
                f"{tag}:{n}",
                **attrs,
                side=tag,
                status=status.get((tag, n), "same"),
                counterpart=f"{'B' if tag == 'A' else 'A'}:{other}" if other else "",
            )
        for u, v, key, attrs in g.edges(keys=True, data=True):
            out.add_edge(f"{tag}:{u}", f"{tag}:{v}", key=key, side=tag, **attrs)
    return out


def diff_graphml(diff: Compared) -> str:
    """The GraphML text of `diff_graph(diff)`."""
    return graphml_text(diff_graph(diff))


def _counterparts(diff: Compared) -> dict[tuple[str, str], str]:
    """(side, node key) -> the other side's node key, for every pair the diagnosis read (the
    matcher's, with the entry's parameters re-paired from evidence)."""

    out: dict[tuple[str, str], str] = {}
    for pair in diff.result.pairs:
        if pair.decided is None:  # canonically identical: paired by name position is unknown
            continue
        for x, y in pair.decided.left.items():
            a, b = node_id(pair.left, x), node_id(pair.right, y)
            out["A", a], out["B", b] = b, a
    return out


def _statuses(diff: Compared) -> dict[tuple[str, str], str]:
    """(side, node key) -> cause / only-A / only-B / changed for the nodes that are not `same`,
    as the diff page marks them: `changed` as the diagnosis decided (`ComputationPair.decided`)."""
    from xlagraph.diagnose.changed import pair_statuses

    out: dict[tuple[str, str], str] = {}
    result = diff.result
    for pair in result.pairs:
        if pair.decided is None:
            continue
        lc, rc = result.left.computations[pair.left], result.right.computations[pair.right]
        left, right = pair_statuses(lc, rc, pair.decided)
        out.update((("A", node_id(pair.left, name)), status) for name, status in left.items())
        out.update((("B", node_id(pair.right, name)), status) for name, status in right.items())
    for tag, module, paired in (("A", diff.left, [p.left for p in result.pairs]),
                                ("B", diff.right, [p.right for p in result.pairs])):  # fmt: skip
        reached = _called_from(module, paired)
        for c in module.computations:
            if c.name not in reached:  # called only from instructions of one side
                out.update(((tag, i.id), f"only-{tag}") for i in c.instructions)
        for n in diff.changed_ids(tag):
            out[tag, n] = "cause"
    return out


def _called_from(module: Module, names: list[str]) -> set[str]:
    """`names` and every computation they call, directly or not (callees of a computation pair
    found identical were not compared one by one, but are identical too)."""
    seen: set[str] = set()
    work = list(names)
    while work:
        name = work.pop()
        if name in seen:
            continue
        seen.add(name)
        work += [callee for i in module.computation(name).instructions for callee in i.calls]
    return seen
