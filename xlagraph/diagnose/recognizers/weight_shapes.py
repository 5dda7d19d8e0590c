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

So is a scalar input that came or went with the resize (`_shared_setting`): a value the
configuration sets (LoRA's alpha/r, 4.0 at rank 4 and 2.0 at rank 8) scales the resized weights'
product; where its new value equals another Python scalar of the step (a gradient's 2.0), torch_xla
makes one input of the two (its scalar data cache), and the graph takes one input fewer (or, the
other way, one more). Evidence: a removed (added) input, scalars only, whose readers' counterparts
all read one kept scalar input of the same type; that input, on both sides, multiplies or divides
the product of the resized weights (within two ops of arithmetic of them, reshapes not counted).
"""

from __future__ import annotations

from xlagraph.canonical.model import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import fold_into
from xlagraph.diagnose.recognizers._dataflow import downstream, updated_inputs
from xlagraph.diagnose.recognizers.input_shape import RESIZED_WEIGHTS_HINT
from xlagraph.diagnose.shapes import shape_of
from xlagraph.ir import strip_layout
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


# Ops of arithmetic a setting may be from the resized weights (their product, then the scaling).
_SCALE_REACH = 2
_SCALES = frozenset({"multiply", "divide"})
# Ops that only move values (broadcasts, reshapes and transposes among them): not counted in that reach.
_MOVES = RESTATES


def _near(comp: CanonicalComputation, roots: set[str]) -> set[str]:
    """What `roots` reach within `_SCALE_REACH` ops of arithmetic (`_MOVES` not counted)."""
    users = users_of(comp)
    by_name = comp.computation.by_name
    # The fewest ops of arithmetic each is reached by: a walk that kept the first depth it met
    # would depend on the order of `roots` (a set), and miss what a shorter path reaches.
    best: dict[str, int] = {}
    front = [(r, 0) for r in roots]
    while front:
        name, depth = front.pop()
        for u in users.get(name, ()):
            d = depth + (by_name[u].opcode not in _MOVES)
            if d <= _SCALE_REACH and d < best.get(u, _SCALE_REACH + 1):
                best[u] = d
                front.append((u, d))
    return set(best)


def _scales(comp: CanonicalComputation, scalar: str, weights: set[str]) -> bool:
    """`scalar` (broadcast or not) is an operand of a multiply or divide near the weights' product."""
    near = _near(comp, weights)
    users, by_name = users_of(comp), comp.computation.by_name
    front, seen = [scalar], {scalar}
    while front:
        for u in users.get(front.pop(), ()):
            op = by_name[u].opcode
            if op in _SCALES and u in near:
                return True
            if op in _MOVES and u not in seen:
                seen.add(u)
                front.append(u)
    return False


def _scalar_type(comp: CanonicalComputation, name: str) -> str:
    shape = strip_layout(comp.instruction(name).shape) if name in comp.param_number else ""
    return shape if shape.endswith("[]") else ""


def _shared_setting(evidence: Evidence, root: Cause, c: Cause) -> bool:
    """`c` removes (adds) scalar inputs that merged with (split from) a kept scalar input that
    scales the resized weights' product on both sides: a setting of the configuration whose value
    now equals (no longer equals) another Python scalar's."""
    if c.kind not in (CauseKind.PARAMETER_REMOVED, CauseKind.PARAMETER_ADDED) or c.info:
        return False
    if not evidence.entry_match:
        return False
    left, right = evidence.left.entry, evidence.right.entry
    removed = c.kind is CauseKind.PARAMETER_REMOVED
    # `own`: the side with the input of its own; `other`: the side reading the kept one for it.
    own, other = (left, right) if removed else (right, left)
    own_names, other_names = (c.left, c.right) if removed else (c.right, c.left)
    to_own = evidence.entry_match if removed else evidence.entry_match_left
    lone = [p for p in own_names if p in own.param_number]
    types = {_scalar_type(own, p) for p in lone}
    if not lone or "" in types:
        return False
    kept = {
        o
        for u in other_names
        for o in other.operands.get(u, ())
        if o in other.param_number and _scalar_type(other, o) in types
    }
    if len(kept) != 1:
        return False
    (mine,) = kept
    theirs = to_own.get(mine, "")
    if theirs not in own.param_number or theirs in lone:
        return False
    resized_l = _weights_changed(left, root, "left")
    resized_r = _weights_changed(right, root, "right")
    own_w, other_w = (resized_l, resized_r) if removed else (resized_r, resized_l)
    return bool(own_w and other_w) and _scales(own, theirs, own_w) and _scales(other, mine, other_w)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    left, right = evidence.left.entry, evidence.right.entry
    for i, root in enumerate(pending):
        if root.kind is not CauseKind.PARAMETER_SHAPE:
            continue
        settings = [j for j, c in enumerate(pending) if _module_settings(left, right, root, c)]
        shared = [j for j, c in enumerate(pending) if _shared_setting(evidence, root, c)]
        echoes = _echoes(left, right, root, pending)
        if not echoes and not settings and not shared:
            continue
        said = []
        if echoes:
            n = sum(pending[j].count for j in echoes)
            said.append(f"{n} reshape/broadcast change(s) downstream follow from them")
        if settings:
            n = sum(pending[j].count for j in settings)
            said.append(f"{n} constant(s) that shape only the resized weights' gradients changed with them")
        if shared:
            n = sum(len(pending[j].changes) or 1 for j in shared)
            merged = pending[shared[0]].kind is CauseKind.PARAMETER_REMOVED
            said.append(
                f"{n} scalar input(s) {'fewer' if merged else 'more'}: a setting that scales the resized "
                "weights' product (LoRA's alpha/r) changed with them, and "
                + ("now equals" if merged else "no longer equals")
                + " another Python scalar (torch_xla makes one input of equal scalars)"
            )
        return fold_into(pending, i, echoes + settings + shared, "; ".join(said))
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
