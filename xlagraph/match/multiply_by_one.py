"""Multiplies by one, seen through by the correspondence.

torch_xla lowers `a + b` (and `a - b`) as `a + b * alpha`, alpha a constant 1, on the second
operand only: a sum of two terms written in the other order moves that multiply from one term to
the other, and each term's data-flow context changes although `x * 1` is `x`. The pairing of
inputs and outputs reads a multiply by an exact scalar one as the value it multiplies, so the
terms keep the context of an operand of the commutative `add`. The instructions stay as they are
everywhere else (hashes, the matching, what is printed)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import compress
from operator import attrgetter
from weakref import WeakKeyDictionary

from xlagraph import _core
from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import Instruction, name_at

__all__ = ["Identities", "identity_multiplies"]

# How printers of every XLA version write a one (`1`, `1.0`, `1e+00`; `true` for pred).
# (rust/src/canon/handle.rs `ONE` holds the same values.)
_ONE = frozenset({"1", "1.", "1.0", "1e0", "1e+0", "1e+00", "1.0e+00", "true"})


@dataclass(frozen=True)
class Identities:
    """`by_name`: each identity multiply -> the value it multiplies (names); `by_index`: the same
    as positions in `Computation.instructions` (what the core's handle indexes)."""

    by_name: dict[str, str]
    by_index: tuple[tuple[int, int], ...]


_NONE = Identities({}, ())
_OPCODE = attrgetter("opcode")
_NAME = attrgetter("name")
_READ = frozenset({"broadcast", "multiply"})


@lru_cache(maxsize=4096)
def _scalar(shape: str) -> bool:
    return shape.split("{", 1)[0].replace(" ", "").endswith("[]")


def _one(constant: Instruction) -> bool:
    return _scalar(constant.shape) and constant.payload.strip().lower() in _ONE


def identity_multiplies(comp: CanonicalComputation) -> Identities:
    """Each live `multiply(x, one)` (either operand the one: a scalar constant 1 or a broadcast
    of one) -> x, followed through chains (`x * 1 * 1`). A multiply that is itself an output
    stays: its slot keeps a node of its own. Kept while `comp` lives (a report's graphs take part
    in several diffs; canonical forms are never modified): never modify the answer."""
    found = _FOUND.get(comp)
    if found is None:
        found = _FOUND[comp] = _identity_multiplies(comp)
    return found


_FOUND: WeakKeyDictionary[CanonicalComputation, Identities] = WeakKeyDictionary()


def _identity_multiplies(comp: CanonicalComputation) -> Identities:
    return _on_handle(comp) if comp.core is not None else _from_instructions(comp)


def _on_handle(comp: CanonicalComputation) -> Identities:
    """The ones as the reader picked them (`_one`, rust/src/canon/handle.rs), the rest in one pass on
    the core's handle (rust/src/matching/multiply_by_one.rs): what `_from_instructions` finds."""
    at = comp.core.scalar_ones()  # type: ignore[union-attr]
    pairs = _core.identity_multiplies_of(comp.core, at) if at else []
    if not pairs:
        return _NONE
    name = name_at(comp.computation.instructions)
    return Identities({name(a): name(b) for a, b in pairs}, tuple(pairs))


def _from_instructions(comp: CanonicalComputation) -> Identities:
    """The rule over the Python IR, for a computation without a handle (a lazy-IR dump)."""
    instructions = comp.computation.instructions
    # Only constants, broadcasts and multiplies are read: picked out at C speed, in order.
    opcodes = list(map(_OPCODE, instructions))
    ones = {ins.name for ins in compress(instructions, map("constant".__eq__, opcodes)) if _one(ins)}
    if not ones:
        return _NONE
    operands = comp.operands
    multiplies: list[str] = []
    for ins in compress(instructions, map(_READ.__contains__, opcodes)):
        if ins.opcode == "broadcast":
            ops = operands.get(ins.name, ())
            if len(ops) == 1 and ops[0] in ones:
                ones.add(ins.name)
        elif ins.name in operands:
            multiplies.append(ins.name)
    outputs = set(comp.outputs)
    found: dict[str, str] = {}
    for name in multiplies:
        ops = operands[name]
        if len(ops) != 2 or name in outputs:
            continue
        if ops[1] in ones and ops[0] not in ones:
            found[name] = ops[0]
        elif ops[0] in ones and ops[1] not in ones:
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
    names = list(map(_NAME, instructions))
    position = {names[k]: k for k in compress(range(len(names)), map(needed.__contains__, names))}
    return Identities(found, tuple((position[a], position[b]) for a, b in found.items()))
