"""Context pairs that only a sum's reordered terms made: look-alike outputs told apart by their
place in the sum alone.

A chain of one associative, commutative opcode whose terms are the same multiset on both sides in
another order (a dict of penalties iterated in another order) moves each term to another place.
Colour refinement reads that place as context, so look-alike outputs that the terms read (one
anchor's delta per term, the same computation over inputs of one shape) trade colours with their
terms, and the context pairs them crosswise, and their inputs with them, while nothing moved but
the terms. Where an output and the other side's output at its slot are the same computation over
the same inputs by number, the slot and the inputs as written agree against the context: the
pair is dropped (and the inputs it read), and the matching, which pairs the terms by content
(rust/src/matching/sum_terms.rs), decides. A real move of outputs with their inputs keeps its
pairs: there the slot or the inputs disagree with the other side's slot. The chains, and what
each term stands for, are the matcher's own (`_compiled.sum_chains`): one rule of what a chain is.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from xlagraph.canonical import CanonicalComputation
from xlagraph.match._compiled import sum_chains
from xlagraph.match.output_pairs import Correspondence

__all__ = ["without_reordered_terms"]

# How many instructions a hash as written or the walk of the terms reads: past it, nothing is
# dropped (terms that hold half the graph are no evidence of what one output is).
_LIMIT = 4096


class _TooLarge(Exception):
    pass


def without_reordered_terms(
    left: CanonicalComputation, right: CanonicalComputation, corr: Correspondence
) -> Correspondence:
    """`corr` without its crossed output pairs that only reordered terms explain, nor the input
    pairs read in those outputs' cones (see the module docstring)."""
    if len(left.outputs) != len(right.outputs) or all(i == j for i, j in corr.outputs.items()):
        return corr
    try:
        wl, wr = _AsWritten(left), _AsWritten(right)
        crossed = [
            i
            for i, j in corr.outputs.items()
            if i != j
            and wl.of(left.outputs[i]) == wr.of(right.outputs[i])
            and wl.of(left.outputs[i]) != wr.of(right.outputs[j])
        ]
        if not crossed:
            return corr
        inside = _in_reordered_terms(left, right, wl, wr)
    except _TooLarge:
        return corr
    crossed = [i for i in crossed if left.outputs[i] in inside]
    if not crossed:
        return corr
    cone = _cone(left, [left.outputs[i] for i in crossed])
    if cone is None:
        return corr
    read = {n for n in cone if n in left.param_number}
    return replace(
        corr,
        outputs=MappingProxyType({i: j for i, j in corr.outputs.items() if i not in crossed}),
        params=MappingProxyType(
            {
                a: b
                for a, b in corr.params.items()
                if a not in read or right.param_number[b] == left.param_number[a]
            }
        ),
    )


class _AsWritten:
    """Each instruction's computation with its inputs by number (`h0` knows them by shape alone),
    memoized: equal values are the same computation over the same inputs."""

    def __init__(self, comp: CanonicalComputation) -> None:
        self.comp = comp
        self.memo: dict[str, int] = {}

    def of(self, name: str) -> int:
        comp, memo = self.comp, self.memo
        stack = [name]
        while stack:
            n = stack[-1]
            if n in memo:
                stack.pop()
                continue
            todo = [o for o in comp.operands.get(n, ()) if o not in memo]
            if todo:
                stack += todo
                continue
            stack.pop()
            memo[n] = hash(
                (
                    comp.h0.get(n, comp.keys.get(n, 0)),
                    comp.param_number.get(n, -1),
                    tuple(memo[o] for o in comp.operands.get(n, ())),
                )
            )
            if len(memo) > _LIMIT:
                raise _TooLarge
        return memo[name]


def _in_reordered_terms(
    left: CanonicalComputation, right: CanonicalComputation, wl: _AsWritten, wr: _AsWritten
) -> set[str]:
    """The instructions of A read by the terms of a chain that B has with the same terms, as
    written, in another order."""
    b_chains = {}
    for _, _, values in sum_chains(right):
        seq = tuple(wr.of(v) for v in values)
        b_chains.setdefault(tuple(sorted(seq)), set()).add(seq)
    stack = []
    for _, terms, values in sum_chains(left):
        seq = tuple(wl.of(v) for v in values)
        others = b_chains.get(tuple(sorted(seq)), set())
        if others and seq not in others:
            stack += terms
    seen = _cone(left, stack)
    if seen is None:
        raise _TooLarge
    return seen


def _cone(comp: CanonicalComputation, roots: list[str]) -> set[str] | None:
    """`roots` and all they read; None past `_LIMIT` instructions."""
    stack, seen = list(roots), set(roots)
    while stack:
        for o in comp.operands.get(stack.pop(), ()):
            if o not in seen:
                seen.add(o)
                stack.append(o)
        if len(seen) > _LIMIT:
            return None
    return seen
