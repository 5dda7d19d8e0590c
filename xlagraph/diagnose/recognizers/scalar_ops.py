"""`constant_value`: arithmetic with a Python scalar present in one graph only. A tracer that
simplifies `x * 1.0` or `x + 0.0` (JAX does, for label smoothing 0.0 or a loss scale of 1.0), or a
value that ties with another constant and is shared, adds or removes a few elementwise ops with a
constant instead of changing one: the same root reason as a baked value that changed, folded into
one cause with it."""

from __future__ import annotations

from xlagraph.diagnose.causes import INTERFACE, Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._causes import merge

__all__ = ["RECOGNIZER"]

HINT = fix("constant_value.scalar_op")
_ARITHMETIC = frozenset(
    {"multiply", "add", "subtract", "divide", "broadcast", "constant", "convert", "reshape", "negate"}
)
_MAX_OPS = 12
# Inputs or outputs that come or go are another reason than a value.


def _scalar_region(evidence: Evidence, cause: Cause) -> bool:
    if cause.kind is not CauseKind.STRUCTURE or max(len(cause.left), len(cause.right)) > _MAX_OPS:
        return False
    ops = [ins.opcode for _, ins in evidence.instructions(cause)]
    return bool(ops) and set(ops) <= _ARITHMETIC and "constant" in ops


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    if any(c.kind in INTERFACE for c in pending):
        return NOTHING
    regions = [i for i, c in enumerate(pending) if _scalar_region(evidence, c)]
    # One place: the same ops missing at every weight (weight decay switched off) is a feature
    # toggled, not one value.
    if len(regions) != 1 or any(
        c.kind is CauseKind.STRUCTURE for i, c in enumerate(pending) if i not in regions
    ):
        return NOTHING
    values = [i for i, c in enumerate(pending) if c.kind is CauseKind.CONSTANT_VALUE]
    changed = [
        f"{ch.old.rsplit(' ', 1)[-1]} -> {ch.new.rsplit(' ', 1)[-1]}"
        for i in values
        for ch in pending[i].changes
    ]
    summary = "arithmetic with a Python scalar in one graph only (elementwise ops with a constant)" + (
        f", and baked values changed ({', '.join(changed[:3])})" if changed else ""
    )
    cause = merge(CauseKind.CONSTANT_VALUE, summary, [pending[i] for i in values + regions], hint=HINT)
    return Recognized((cause,), frozenset(values + regions))


RECOGNIZER = Recognizer("scalar_ops", _recognize)
