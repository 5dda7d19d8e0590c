"""Multiplies by one, seen through by the correspondence.

torch_xla lowers `a + b` (and `a - b`) as `a + b * alpha`, alpha a constant 1, on the second
operand only: a sum of two terms written in the other order moves that multiply from one term to
the other, and each term's data-flow context changes although `x * 1` is `x`. The pairing of
inputs and outputs reads a multiply by an exact scalar one as the value it multiplies, so the
terms keep the context of an operand of the commutative `add`. The instructions stay as they are
everywhere else (hashes, the matching, what is printed)."""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from xlagraph.canonical import CanonicalComputation

__all__ = ["Identities", "identity_multiplies"]

# How printers of every XLA version write a one (`1`, `1.0`, `1e+00`; `true` for pred).
_ONE = frozenset({"1", "1.", "1.0", "1e0", "1e+0", "1e+00", "1.0e+00", "true"})


@dataclass(frozen=True)
class Identities:
    """`by_name`: each identity multiply -> the value it multiplies (names); `by_index`: the same
    as positions in `Computation.instructions` (what the core's handle indexes)."""

    by_name: dict[str, str]
    by_index: tuple[tuple[int, int], ...]


_NONE = Identities({}, ())


def _scalar(shape: str) -> bool:
    return shape.split("{", 1)[0].replace(" ", "").endswith("[]")


# Asked for by both graphs of a computation and its signatures, for every pair it is in.
_FOUND: WeakKeyDictionary[CanonicalComputation, Identities] = WeakKeyDictionary()


def identity_multiplies(comp: CanonicalComputation) -> Identities:
    found = _FOUND.get(comp)
    if found is None:
        found = _FOUND[comp] = _identity_multiplies(comp)
    return found


def _identity_multiplies(comp: CanonicalComputation) -> Identities:
    """Each live `multiply(x, one)` (either operand the one: a scalar constant 1 or a broadcast
    of one) -> x, followed through chains (`x * 1 * 1`). A multiply that is itself an output
    stays: its slot keeps a node of its own."""
    instructions = comp.computation.instructions
    # One pass, the opcode read once per instruction (a 600K-instruction module has 600K);
    # broadcasts are looked at only where a multiply reads them.
    ones: set[str] = set()
    multiplies: list[str] = []
    for ins in instructions:
        op = ins.opcode
        if op == "multiply":
            multiplies.append(ins.name)
        elif op == "constant" and ins.payload.strip().lower() in _ONE and _scalar(ins.shape):
            ones.add(ins.name)
    if not ones or not multiplies:
        return _NONE
    operands = comp.operands
    by_name = comp.computation.by_name
    known: dict[str, bool] = {}

    def is_one(name: str) -> bool:
        got = known.get(name)
        if got is None:
            got = name in ones
            if not got:
                ins = by_name.get(name)
                ops = operands.get(name, ())
                got = ins is not None and ins.opcode == "broadcast" and len(ops) == 1 and ops[0] in ones
            known[name] = got
        return got

    outputs = set(comp.outputs)
    found: dict[str, str] = {}
    for name in multiplies:
        ops = operands.get(name, ())
        if len(ops) != 2 or name in outputs:
            continue
        one0, one1 = is_one(ops[0]), is_one(ops[1])
        if one1 and not one0:
            found[name] = ops[0]
        elif one0 and not one1:
            found[name] = ops[1]
    for name in found:
        seen = {name}
        target = found[name]
        while target in found and target not in seen:
            seen.add(target)
            target = found[target]
        found[name] = target
    if not found:
        return _NONE
    needed = set(found) | set(found.values())
    position = {ins.name: k for k, ins in enumerate(instructions) if ins.name in needed}
    return Identities(found, tuple((position[a], position[b]) for a, b in found.items()))
