"""torch_xla's token chain of all-reduces, found over the canonical form's dictionaries: the
readable reference of rust/src/matching/collective_chain.rs, which the core's graphs leave out.
tests/test_collective_chain.py holds the core to it."""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout

__all__ = ["chain_edges_reference"]


def chain_edges_reference(comp: CanonicalComputation) -> dict[str, frozenset[int]]:
    """Per reader, the operand positions of the chain: an all-reduce's scalar token (its last
    operand, converts seen through), where it is the token another chained all-reduce handed over
    (a scalar `get-tuple-element` of it) or a leaf read only as chained all-reduces' token; and
    the scalar `get-tuple-element` of a chained all-reduce read only as the next ones' token."""
    operands, by_name = comp.operands, comp.computation.by_name
    users: dict[str, list[str]] = {}
    for u in comp.order:
        for o in operands[u]:
            users.setdefault(o, []).append(u)

    def opcode(n: str) -> str:
        return by_name[n].opcode

    def shape(n: str) -> str:
        return strip_layout(by_name[n].shape).replace(" ", "")

    def scalar(n: str) -> bool:
        return not shape(n).startswith("(") and shape(n).endswith("[]")

    def chained(x: str) -> bool:
        ops = operands.get(x, ())
        return opcode(x) == "all-reduce" and shape(x).startswith("(") and len(ops) >= 2 and scalar(ops[-1])

    def reads_last(u: str, v: str) -> bool:
        return chained(u) and operands[u][-1] == v

    def token_of_next(v: str) -> bool:
        return all(
            reads_last(u, v) or (opcode(u) == "convert" and all(reads_last(w, u) for w in users.get(u, ())))
            for u in users.get(v, ())
        )

    found: dict[str, set[int]] = {}
    for x in comp.order:
        if not chained(x):
            continue
        ops = operands[x]
        token = ops[-1]
        while opcode(token) == "convert" and len(operands.get(token, ())) == 1:
            token = operands[token][0]
        read = operands.get(token, ())
        passed = (
            opcode(token) == "get-tuple-element" and scalar(token) and len(read) == 1 and chained(read[0])
        )
        if passed or (not read and token_of_next(token)):
            found.setdefault(x, set()).add(len(ops) - 1)
        for g in users.get(x, ()):
            if opcode(g) == "get-tuple-element" and scalar(g) and token_of_next(g):
                found.setdefault(g, set()).add(0)
    return {n: frozenset(js) for n, js in found.items()}
