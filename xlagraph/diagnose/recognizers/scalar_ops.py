"""`constant_value`: arithmetic with a Python scalar present in one graph only. A tracer that
simplifies `x * 1.0` or `x + 0.0` (JAX does, for label smoothing 0.0 or a loss scale of 1.0), or a
value that ties with another constant and is shared, adds or removes a few elementwise ops with a
constant instead of changing one: the same root reason as a baked value that changed, folded into
one cause with it."""

from __future__ import annotations

from xlagraph.diagnose.causes import INTERFACE, Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.numbers import is_number, numbers_equal
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._dataflow import restated

__all__ = ["RECOGNIZER"]

HINT = fix("constant_value.scalar_op")
_ARITHMETIC = frozenset(
    {"multiply", "add", "subtract", "divide", "broadcast", "constant", "convert", "reshape", "negate"}
)
_MAX_OPS = 12
# Inputs or outputs that come or go are another reason than a value.


def _scalar_region(evidence: Evidence, cause: Cause, values: tuple[frozenset[str], frozenset[str]]) -> bool:
    """A few elementwise ops with a constant: one of their own, or one whose value changed
    (`values`, A's and B's: `loss * 1024 / 1024` against `loss / 1`, where JAX dropped the `* 1.0`; the
    divisor pairs with the 1 and is named with the baked values, the multiply comes and goes)."""
    if cause.kind is not CauseKind.STRUCTURE or max(len(cause.left), len(cause.right)) > _MAX_OPS:
        return False
    found = evidence.instructions(cause)
    ops = {ins.opcode for _, ins in found}
    if not ops or not ops <= _ARITHMETIC:
        return False
    return "constant" in ops or any(
        o in values[canon is evidence.right] for canon, ins in found for o in ins.operands
    )


def _shared(evidence: Evidence, cause: Cause) -> list[tuple[str, str]]:
    """(A's value, B's value) for each op of the region that reads its own scalar constant in one
    graph where its counterpart reads the same operands but, in that slot, a constant of another
    value from outside the region: AdamW's `wd * w` with wd = 0.1 reads the broadcast of
    `1 - b1` = 0.1 that B already has, so only A carries the constant. Empty when any reader of
    the region's constants is not so."""
    if not evidence.entry_match or cause.computation not in ("", evidence.left.entry.name):
        return []
    found: list[tuple[str, str]] = []
    for side, names in ((0, cause.left), (1, cause.right)):
        here, other = (evidence.left, evidence.right) if side == 0 else (evidence.right, evidence.left)
        pair = evidence.entry_match_left if side == 0 else evidence.entry_match
        back = evidence.entry_match if side == 0 else evidence.entry_match_left
        hc, oc = here.entry, other.entry
        own = {n for n in names if _scalar_constant(hc, n)}
        for u in names:
            ops = hc.operands.get(u, ())
            slots = [i for i, o in enumerate(ops) if restated(hc, o) in own]
            if not slots or restated(hc, u) in own:
                continue  # the constant itself, or its broadcast
            v = pair.get(u)
            theirs = oc.operands.get(v, ()) if v is not None else ()
            if v is None or len(theirs) != len(ops) or _opcode(hc, u) != _opcode(oc, v):
                return []
            for i, (o, t) in enumerate(zip(ops, theirs, strict=True)):
                if i not in slots:
                    if back.get(t) != o:
                        return []
                    continue
                mine, their = _value(hc, restated(hc, o)), _value(oc, restated(oc, t))
                if not (their and restated(oc, t) not in (cause.right if side == 0 else cause.left)):
                    return []
                if numbers_equal(mine, their):
                    return []
                found.append((mine, their) if side == 0 else (their, mine))
    return found


def _scalar_constant(comp, name: str) -> bool:  # type: ignore[no-untyped-def]
    return bool(_value(comp, name))


def _opcode(comp, name: str) -> str:  # type: ignore[no-untyped-def]
    ins = comp.computation.by_name.get(name)
    return ins.opcode if ins is not None else ""


def _value(comp, name: str) -> str:  # type: ignore[no-untyped-def]
    """The value of the scalar constant `name`; `` if it is none."""
    ins = comp.computation.by_name.get(name)
    if ins is None or ins.opcode != "constant" or "[]" not in ins.shape or not is_number(ins.payload.strip()):
        return ""
    return ins.payload.strip()


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    if any(c.kind in INTERFACE for c in pending):
        return NOTHING
    values = [i for i, c in enumerate(pending) if c.kind is CauseKind.CONSTANT_VALUE]
    named = (
        frozenset(n for i in values for n in pending[i].left),
        frozenset(n for i in values for n in pending[i].right),
    )
    regions = [i for i, c in enumerate(pending) if _scalar_region(evidence, c, named)]
    if not regions or any(c.kind is CauseKind.STRUCTURE for i, c in enumerate(pending) if i not in regions):
        return NOTHING
    # One place: the same ops missing at every weight (weight decay switched off) is a feature
    # toggled, not one value; unless at every place the ops read another constant in the other
    # graph (the value changed, and there ties with a constant the graph shares).
    shared = [_shared(evidence, pending[i]) for i in regions] if len(regions) > 1 else []
    if len(regions) > 1 and not all(shared):
        return NOTHING
    changed = [
        f"{ch.old.rsplit(' ', 1)[-1]} -> {ch.new.rsplit(' ', 1)[-1]}"
        for i in values
        for ch in pending[i].changes
    ]
    ties = sorted({f"{a} -> {b}" for found in shared for a, b in found})
    if ties:
        summary = (
            f"a Python scalar changed ({', '.join(ties[:3])}) at {len(regions)} places, where one graph "
            "reads an equal constant it already has instead of its own"
        )
    else:
        summary = "arithmetic with a Python scalar in one graph only (elementwise ops with a constant)"
    summary += f", and baked values changed ({', '.join(changed[:3])})" if changed else ""
    cause = merge(CauseKind.CONSTANT_VALUE, summary, [pending[i] for i in values + regions], hint=HINT)
    return Recognized((cause,), frozenset(values + regions))


RECOGNIZER = Recognizer("scalar_ops", _recognize)
