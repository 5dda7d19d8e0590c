"""Shape plumbing that follows from weights of another shape: another model configuration.

Weights of another shape (2 vs 4 key/value heads in grouped-query attention, a LoRA rank, a
hidden size) change how their results are reshaped, broadcast and reduced downstream: GQA's
`repeat_interleave` of the key/value heads disappears when there are as many as query heads, and a
broadcast gains a dimension. Those regions read only what the changed weights produce; they are
that configuration change, not patterns of their own (a 'Python int' attribute, an unknown
structure). Folded into the `parameter_shape` cause, in the entry only, and only regions made of
ops that move or reshape values: new arithmetic stays a cause of its own.
"""

from __future__ import annotations

from xlagraph.canonical.model import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import fold_into
from xlagraph.diagnose.recognizers._dataflow import RESTATES, downstream, updated_inputs
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]

_SHAPING = RESTATES | {
    "broadcast",
    "reshape",
    "transpose",
    "reduce",
    "slice",
    "concatenate",
    "pad",
    "constant",
    "get-tuple-element",
    "tuple",
}
_LOOSE = (CauseKind.STRUCTURE, CauseKind.ATTRIBUTE)


def _weights_changed(comp: CanonicalComputation, cause: Cause, side: str) -> set[str]:
    names = set(getattr(cause, side))
    updated = set(updated_inputs(comp, comp.outputs).values())
    return names & updated & set(comp.param_number)


def _reads_only(comp: CanonicalComputation, names: tuple[str, ...], cone: set[str]) -> bool:
    """Every named op is shape plumbing downstream of the changed weights."""
    by_name = comp.computation.by_name
    return bool(names) and all(n in by_name and n in cone and by_name[n].opcode in _SHAPING for n in names)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    left, right = evidence.left.entry, evidence.right.entry
    for i, root in enumerate(pending):
        if root.kind is not CauseKind.PARAMETER_SHAPE:
            continue
        wl, wr = _weights_changed(left, root, "left"), _weights_changed(right, root, "right")
        if not wl or not wr:
            continue
        cone_l, cone_r = downstream(users_of(left), wl), downstream(users_of(right), wr)
        echoes = [
            j
            for j, c in enumerate(pending)
            if c.kind in _LOOSE
            and (c.left or c.right)
            and (not c.left or _reads_only(left, c.left, cone_l))
            and (not c.right or _reads_only(right, c.right, cone_r))
        ]
        if not echoes:
            continue
        n = sum(pending[j].count for j in echoes)
        return fold_into(pending, i, echoes, f"{n} reshape/broadcast change(s) downstream follow from them")
    return NOTHING


RECOGNIZER = Recognizer("weight_shapes", _recognize)
