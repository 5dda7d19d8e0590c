"""Walks over a graph's data flow: what reads a value, what a value is computed from, the value an
instruction restates, and the inputs a training step updates (its weights and state)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from xlagraph._kept import kept_while_alive
from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.evidence import Evidence
from xlagraph.diagnose.shapes import shape_of
from xlagraph.opcodes import RESTATES

__all__ = [
    "downstream",
    "opcodes",
    "restated",
    "rewired",
    "same_ops",
    "updated_inputs",
    "upstream",
]


def downstream(users: Mapping[str, Sequence[str]], roots: Iterable[str]) -> set[str]:
    """Every instruction that reads `roots`, directly or not (a root only where another root
    reads it); over operands instead of users, everything the roots read."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        for u in users.get(stack.pop(), ()):
            if u not in seen:
                seen.add(u)
                stack.append(u)
    return seen


def upstream(operands: Mapping[str, Sequence[str]], roots: Iterable[str]) -> set[str]:
    """`roots` and everything they read, directly or not."""
    seeds = set(roots)
    return seeds | downstream(operands, seeds)


def same_ops(evidence: Evidence, *causes: Cause, aside: frozenset[str] = frozenset()) -> bool:
    """Both sides of the regions run the same ops (those in `aside` left out): the same work,
    only wired otherwise."""
    left: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for cause in causes:
        for canon, ins in evidence.instructions(cause):
            if ins.opcode not in aside:
                (left if canon is evidence.left else right)[ins.opcode] += 1
    return left == right


def opcodes(evidence: Evidence, cause: Cause) -> set[str]:
    """The opcodes of the instructions a cause names, both graphs."""
    return {ins.opcode for _, ins in evidence.instructions(cause)}


def restated(comp, name: str) -> str:  # type: ignore[no-untyped-def]
    """The instruction `name` restates, past transposes, reshapes, broadcasts and converts."""
    for _ in range(16):
        ins = comp.computation.by_name.get(name)
        if ins is None or ins.opcode not in RESTATES or len(comp.operands.get(name, ())) != 1:
            return name
        name = comp.operands[name][0]
    return name


def updated_inputs(comp, outputs: Iterable[str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Output -> the input of its own shape it updates (`p - lr * grad`, `buf * m + grad`), for
    the `outputs` (of `comp`) that do: the inputs a training step updates are its weights and
    state. The core answers for all outputs (rust/src/canon/handle.rs `updated_inputs`; its
    readable rule: tests/oracles/updated_inputs_reference.py), each output on its own."""
    found = _updated(comp)
    return dict(found) if outputs is comp.outputs else {o: found[o] for o in outputs if o in found}


def trained(comp, updates: Mapping[str, str], name: str) -> bool:  # type: ignore[no-untyped-def]
    """Input `name` is updated (`updates`: updated_inputs' answer) from another tensor the step
    reads, a gradient of the data and the other weights, not from scalars alone: an augmented
    view kept alive (`x + 0.1 * randn_like(x)`) reads its input and a random seed only, so it is
    data, not a weight."""
    outs = [o for o, p in updates.items() if p == name]
    seen = upstream(comp.operands, outs) if outs else set()
    return any(q != name and q in seen and not shape_of(comp, q).endswith("[]") for q in comp.param_number)


@kept_while_alive  # of all outputs, several recognizers ask, in every diff the computation is part of
def _updated(comp) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return comp.core.updated_inputs()


def rewired(evidence: Evidence, cause: Cause) -> bool:
    """Every instruction of the region is matched to one of the same opcode and shape whose
    operands differ only by parameters (each side's operand is an input)."""
    left, right = evidence.left.entry, evidence.right.entry
    match = evidence.entry_match
    if not cause.right or len(cause.left) != len(cause.right):
        return False
    for b in cause.right:
        a = match.get(b)
        if a is None or a not in cause.left or b not in right.operands or a not in left.operands:
            return False
        ia, ib = left.instruction(a), right.instruction(b)
        if ia.opcode != ib.opcode or ia.shape != ib.shape:
            return False
        oa, ob = left.operands[a], right.operands[b]
        if len(oa) != len(ob):
            return False
        for x, y in zip(oa, ob, strict=True):
            if match.get(y) != x and not (x in left.param_number and y in right.param_number):
                return False
    return True
