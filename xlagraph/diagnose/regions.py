"""What no earlier step explained, as connected regions of changed instructions.

Each region becomes one raw `structure` difference; the recognizers then say which pattern it
is (work on some steps only, optimizer state, a dtype change ...), and only what none of them
knows stays `structure`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from xlagraph._core import unexplained as _core_unexplained
from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import CauseKind, Change
from xlagraph.diagnose.collectives import is_collective
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.noop_converts import identity_only, noop_note
from xlagraph.match.users import users_of

if TYPE_CHECKING:
    from xlagraph.diagnose.comparison import Comparison

__all__ = ["structure"]

Node = tuple[str, str]


class _Graph:
    """An undirected graph that only answers membership and connected components (union-find).
    networkx did this; its import alone took longer than the whole region pass of a 120K diff."""

    def __init__(self) -> None:
        self._parent: dict[Node, Node] = {}

    def add_node(self, n: Node) -> None:
        self._parent.setdefault(n, n)

    def add_edge(self, a: Node, b: Node) -> None:
        self.add_node(a)
        self.add_node(b)
        ra, rb = self._root(a), self._root(b)
        if ra != rb:
            self._parent[ra] = rb

    def _root(self, n: Node) -> Node:
        parent = self._parent
        while parent[n] != n:
            parent[n] = parent[parent[n]]  # path halving: chains stay short
            n = parent[n]
        return n

    def __contains__(self, n: object) -> bool:
        return n in self._parent

    def __iter__(self) -> Iterator[Node]:
        return iter(self._parent)

    def __bool__(self) -> bool:
        return bool(self._parent)

    def components(self) -> list[set[Node]]:
        groups: dict[Node, set[Node]] = {}
        for n in self._parent:
            groups.setdefault(self._root(n), set()).add(n)
        return list(groups.values())


def structure(cmp: Comparison, structural: list[tuple[str, str]], absorb_collectives: bool) -> None:
    left, right = cmp.left, cmp.right
    pl, pr = cmp.pair_left, cmp.pair_right
    g = _Graph()
    lefts, rights = _unexplained(cmp)
    for a in lefts:
        g.add_node(("A", a))
    for b in rights:
        g.add_node(("B", b))
    for a, b in structural:
        g.add_edge(("A", a), ("B", b))
    if not g:
        return
    for side, comp, matched in (("A", left, pl), ("B", right, pr)):
        # The region's names in program order, picked at C speed (the regions are small).
        for name in filter(_names(g, side).__contains__, comp.order):
            for o in comp.operands[name]:
                if (side, o) in g:
                    g.add_edge((side, name), (side, o))
                elif o in matched and comp.instruction(o).opcode not in ("parameter", "constant"):
                    anchor = o if side == "A" else matched[o]
                    g.add_edge((side, name), ("M", anchor))
    for side, comp, matched in (("A", left, pl), ("B", right, pr)):
        for a, b in _users_by_anchor(side, comp, matched, g):
            g.add_edge(a, b)
    lpos = dict(zip(left.order, range(len(left.order)), strict=True))
    rpos = dict(zip(right.order, range(len(right.order)), strict=True))
    for component in sorted(g.components(), key=lambda c: min(str(n) for n in c)):
        lefts = sorted((n for s, n in component if s == "A"), key=lpos.__getitem__)
        rights = sorted((n for s, n in component if s == "B"), key=rpos.__getitem__)
        ops = [left.instruction(n).opcode for n in lefts] + [right.instruction(n).opcode for n in rights]
        if absorb_collectives and any(is_collective(op) for op in ops):
            cmp.absorb_into(CauseKind.COLLECTIVE, lefts, rights)
            continue
        if set(ops) <= {"convert"} and cmp.absorb_into(CauseKind.DTYPE, lefts, rights):
            continue
        in_region = set(lefts)
        changed = [(a, b) for a, b in structural if a in in_region]
        desc = []
        if changed:
            desc.append(f"{len(changed)} changed")
        only_a = [n for n in lefts if n not in pl]
        only_b = [n for n in rights if n not in pr]
        if only_a:
            desc.append(f"{len(only_a)} only in A")
        if only_b:
            desc.append(f"{len(only_b)} only in B")
        noop = identity_only(cmp, lefts, rights, changed)
        cmp.cause(
            CauseKind.STRUCTURE,
            f"{', '.join(desc)} instruction(s) ({fmt_list(sorted(set(ops)), 5)})",
            lefts,
            rights,
            changes=tuple(
                Change(a, b, "opcode", left.instruction(a).opcode, right.instruction(b).opcode)
                for a, b in changed
                if left.instruction(a).opcode != right.instruction(b).opcode
            ),
        )
        if noop:
            shapes = sorted(
                {left.instruction(n).shape for n in only_a} | {right.instruction(n).shape for n in only_b}
            )
            cmp.noops.append((cmp.causes.pop(), noop_note(len(only_a), len(only_b), shapes)))


def _unexplained(cmp: Comparison) -> tuple[list[str], list[str]]:
    """Each side's instructions, in order, that are not paired, not explained by a cause, and
    whose `h1` has no twin: a subgraph computed twice on one side and once (shared) on the other
    is the same computation (lowering does not always reuse a node: same graph hash, other
    CSE). Twins are judged on both sides: canonical parameter numbers differ when an input is
    added, so a repeated transpose of a weight is told by its matched twin on its own side too.
    The compiled core answers (rust/src/diagnose/changes.rs; its readable reference is
    tests/oracles/changes_reference.py)."""
    left, right = cmp.left, cmp.right
    lefts, rights = _core_unexplained(
        left.core, right.core, cmp.pair_left, cmp.pair_right, cmp.explained_left, cmp.explained_right
    )
    return lefts, rights


def _users_by_anchor(
    side: str, comp: CanonicalComputation, matched: dict[str, str], g: _Graph
) -> list[tuple[Node, Node]]:
    """Changed regions of both sides that flow into the same matched instruction are one region."""
    edges: list[tuple[Node, Node]] = []
    users = users_of(comp)
    readers = {u for o in _names(g, side) for u in users.get(o, ()) if u in matched}
    for name in filter(readers.__contains__, comp.order):  # program order, as a full scan gives
        for o in comp.operands[name]:
            if (side, o) in g:
                anchor = name if side == "A" else matched[name]
                edges.append(((side, o), ("M", anchor)))
    return edges


def _names(g: _Graph, side: str) -> set[str]:
    return {n for s, n in g if s == side}
