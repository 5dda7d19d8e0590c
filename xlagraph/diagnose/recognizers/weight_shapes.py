"""Shape plumbing that follows from weights of another shape: another model configuration.

Weights of another shape (2 vs 4 key/value heads in grouped-query attention, a LoRA rank, a
hidden size) change how their results are reshaped, broadcast and reduced downstream: GQA's
`repeat_interleave` of the key/value heads disappears when there are as many as query heads, and a
broadcast gains a dimension. Those regions read only what the changed weights produce; they are
that configuration change, not patterns of their own (a 'Python int' attribute, an unknown
structure). Folded into the `parameter_shape` cause, in the entry only, and only regions made of
ops that move or reshape values: new arithmetic stays a cause of its own.

A constant that changed with the resize (an embedding's `padding_idx` of the replaced table, compared
with the ids in its gradient) is folded too, when every result it reaches has the old weight's
shape in A and the new weight's in B: it shapes only the resized weights' gradients and updates,
so it is the new module's setting, not a Python scalar of its own.
"""

from __future__ import annotations

from xlagraph.canonical.model import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import fold_into
from xlagraph.diagnose.recognizers._dataflow import downstream, updated_inputs
from xlagraph.diagnose.recognizers.input_shape import RESIZED_WEIGHTS_HINT
from xlagraph.diagnose.shapes import shape_of
from xlagraph.match.users import users_of
from xlagraph.opcodes import RESTATES

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


def _only_reaches(comp: CanonicalComputation, names: tuple[str, ...], shapes: set[str]) -> bool:
    """Every output the named ops reach has one of `shapes` (and they reach at least one)."""
    cone = downstream(users_of(comp), names)
    reached = [o for o in comp.outputs if o in cone]
    return bool(reached) and all(_bare(shape_of(comp, o)) in shapes for o in reached)


def _bare(shape: str) -> str:
    return shape.split("{")[0]


def _module_settings(left: CanonicalComputation, right: CanonicalComputation, root: Cause, c: Cause) -> bool:
    """`c` is a constant change that shapes only the resized weights' gradients and updates: the
    shape change read as weights resized (not a batch of another size), the weights the inputs
    the step updates on either side."""
    if (
        c.kind is not CauseKind.CONSTANT_VALUE
        or not c.left
        or not c.right
        or root.hint != RESIZED_WEIGHTS_HINT
    ):
        return False
    weights_l = set(updated_inputs(left, left.outputs).values())
    weights_r = set(updated_inputs(right, right.outputs).values())
    resized = [
        (_bare(ch.old), _bare(ch.new))
        for ch in root.changes
        if ch.what == "shape" and (ch.left in weights_l or ch.right in weights_r)
    ]
    old = {a for a, _ in resized} - {b for _, b in resized}
    new = {b for _, b in resized} - {a for a, _ in resized}
    return bool(old and new) and _only_reaches(left, c.left, old) and _only_reaches(right, c.right, new)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    left, right = evidence.left.entry, evidence.right.entry
    for i, root in enumerate(pending):
        if root.kind is not CauseKind.PARAMETER_SHAPE:
            continue
        settings = [j for j, c in enumerate(pending) if _module_settings(left, right, root, c)]
        echoes = _echoes(left, right, root, pending)
        if not echoes and not settings:
            continue
        said = []
        if echoes:
            n = sum(pending[j].count for j in echoes)
            said.append(f"{n} reshape/broadcast change(s) downstream follow from them")
        if settings:
            n = sum(pending[j].count for j in settings)
            said.append(f"{n} constant(s) that shape only the resized weights' gradients changed with them")
        return fold_into(pending, i, echoes + settings, "; ".join(said))
    return NOTHING


def _echoes(
    left: CanonicalComputation, right: CanonicalComputation, root: Cause, pending: tuple[Cause, ...]
) -> list[int]:
    """The loose regions that are shape plumbing downstream of the weights `root` resized."""
    wl, wr = _weights_changed(left, root, "left"), _weights_changed(right, root, "right")
    if not wl or not wr:
        return []
    cone_l, cone_r = downstream(users_of(left), wl), downstream(users_of(right), wr)
    return [
        j
        for j, c in enumerate(pending)
        if c.kind in _LOOSE
        and (c.left or c.right)
        and (not c.left or _reads_only(left, c.left, cone_l))
        and (not c.right or _reads_only(right, c.right, cone_r))
    ]


RECOGNIZER = Recognizer("weight_shapes", _recognize)
