"""The multiplies by one the correspondence sees through, found over the Python IR: the readable
reference of rust/src/matching/multiply_by_one.rs (and of the ones rust/src/canon/handle.rs picks),
which `xlagraph.match.multiply_by_one` calls. tests/test_identity_multiplies.py and
tests/test_canon_map.py hold the core to it."""

from __future__ import annotations

from functools import lru_cache
from itertools import compress
from operator import attrgetter

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import Instruction
from xlagraph.match.multiply_by_one import Identities

__all__ = ["ONE", "identity_multiplies_reference", "one"]

# How printers of every XLA version write a one (`1`, `1.0`, `1e+00`; `true` for pred).
ONE = frozenset({"1", "1.", "1.0", "1e0", "1e+0", "1e+00", "1.0e+00", "true"})
_NONE = Identities({}, ())
_OPCODE = attrgetter("opcode")
_NAME = attrgetter("name")
_READ = frozenset({"broadcast", "multiply"})


@lru_cache(maxsize=4096)
def _scalar(shape: str) -> bool:
    return shape.split("{", 1)[0].replace(" ", "").endswith("[]")


def one(constant: Instruction) -> bool:
    return _scalar(constant.shape) and constant.payload.strip().lower() in ONE


def identity_multiplies_reference(comp: CanonicalComputation) -> Identities:
    """`multiply_by_one.identity_multiplies`, the rule over the Python IR."""
    instructions = comp.computation.instructions
    # Only constants, broadcasts and multiplies are read: picked out at C speed, in order.
    opcodes = list(map(_OPCODE, instructions))
    ones = {ins.name for ins in compress(instructions, map("constant".__eq__, opcodes)) if one(ins)}
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
