"""`parameter_added`: a Python list of device tensors grew and the step stacks it
(`torch.stack(history)`, `torch.cat(chunks)`). Each element is an input of its own, so every new
length is another graph, and what follows from the length (the concatenation's size, a mean's
divisor, a result computed from the list and kept alive) changes with it: one cause, not a new
input, a structure, a constant and an output."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._dataflow import downstream
from xlagraph.diagnose.recognizers.input_shape import GROWING_STATE_HINT
from xlagraph.match.shapes import moved_dims
from xlagraph.match.users import users_of
from xlagraph.opcodes import RESTATES

__all__ = ["RECOGNIZER"]

HINT = fix("parameter_added.growing_list")
# Operands a region's new ops may read besides the concatenation's cone: the matcher may pair
# the new element's reshape with an old one, so the reshape left over reads another input.
_SOURCES = frozenset({"constant", "parameter"})
_PASS_THROUGH = RESTATES - {"transpose"}
# What a longer concatenation changes around it: its own size, and the reductions over it.
_FOLLOWERS = frozenset(
    {"concatenate", "reshape", "broadcast", "convert", "divide", "multiply", "reduce", "add", "constant"}
)


def _concatenations(evidence: Evidence, params: list[str]) -> set[str] | None:
    """B's concatenates every new input reaches through reshapes, or None if one does not."""
    comp = evidence.right.entry
    users = users_of(comp)
    found: set[str] = set()
    for p in params:
        frontier, reached = [p], False
        for _ in range(4):
            nxt = []
            for n in frontier:
                for u in users.get(n, ()):
                    op = comp.instruction(u).opcode
                    if op == "concatenate":
                        found.add(u)
                        reached = True
                    elif op in _PASS_THROUGH:
                        nxt.append(u)
            frontier = nxt
        if not reached:
            return None
    return found


def _follows(evidence: Evidence, cause: Cause, concats: set[str], below: set[str]) -> bool:
    """A region that is the longer concatenation and what reads it, with the numbers computed from
    constants alone (a mean's count and its guard against 0), or one made only of the ops a length
    change touches."""
    ops = evidence.instructions(cause)
    if not concats & set(cause.right):
        # Elsewhere, ops a length change touches: another concatenation, or what reads the
        # stacked list's result (the loss divided by the mean of the history).
        read = bool(cause.right) and set(cause.right) <= below
        return (read or any(ins.opcode == "concatenate" for _, ins in ops)) and all(
            ins.opcode in _FOLLOWERS for _, ins in ops
        )
    right = evidence.right.entry
    todo = [ins.name for canon, ins in ops if canon is evidence.right and ins.name not in below]
    settled = set(below)
    changed = True
    while todo and changed:
        changed = False
        for n in list(todo):
            if all(
                o in settled or right.instruction(o).opcode in _SOURCES for o in right.operands.get(n, ())
            ):
                settled.add(n)
                todo.remove(n)
                changed = True
    return not todo


def _count(text: str) -> int | None:
    """`s64[] 3` / `f32[] 3` -> 3 when the value is a whole number."""
    value = text.rsplit(" ", 1)[-1]
    try:
        f = float(value)
    except ValueError:
        return None
    return int(f) if f.is_integer() and 0 < f < 1 << 20 else None


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    added = [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_ADDED]
    params_of = evidence.right.entry.param_number
    params = [p for i in added for p in pending[i].right if p in params_of]
    if not params:
        return NOTHING
    concats = _concatenations(evidence, params)
    if not concats:
        return NOTHING
    k = len(params)
    right = evidence.right.entry
    sizes = {len(right.operands.get(c, ())) for c in concats}
    counts = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.CONSTANT_VALUE
        and c.changes
        and all(
            (a := _count(ch.old)) is not None
            and (b := _count(ch.new)) is not None
            and (b - a == k or b in sizes)
            for ch in c.changes
        )
    ]
    below = downstream(users_of(right), concats | set(params)) | concats | set(params)
    regions = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.STRUCTURE and _follows(evidence, c, concats, below)
    ]
    # A result computed from the stacked list and kept alive (a baseline that is the history's mean
    # once the list is not empty) is a new output only because the list grew: the same cause.
    kept = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.OUTPUT_ADDED
        and (heads := [ch.right for ch in c.changes if ch.what == "output"])
        and all(h in below and h not in params for h in heads)
    ]
    regions += kept
    new_shapes = ", ".join(sorted({right.instruction(p).shape.split("{")[0] for p in params}))
    n = max(sizes)
    summary = (
        f"a list of tensors stacked in the step grew by {k} (the concatenation now takes {n} inputs; "
        f"{k} new input(s) of {new_shapes})"
        + ("; the counts derived from its length changed with it" if counts else "")
    )
    cause = merge(
        CauseKind.PARAMETER_ADDED, summary, [pending[i] for i in added + regions + counts], hint=HINT
    )
    # Ops that read the longer concatenation (an attention over a context grown by the new element)
    # changed size because of it: a shape carried by the new input, cited at that input's lines,
    # not sizes "with no input to carry it".
    sized = [
        i for i, c in enumerate(pending) if c.attribute_only("shape") and c.right and set(c.right) <= below
    ]
    if not sized:
        return Recognized((cause,), frozenset(added + regions + counts))
    # Sizes the program read off the longer tensor (a mask or a bias broadcast to its length) change
    # by the same lengths without reading it: the same cause.
    lengths = {p for i in sized for ch in pending[i].changes for p in moved_dims(ch.old, ch.new)}
    sized += [
        i
        for i, c in enumerate(pending)
        if i not in sized
        and c.kind is CauseKind.ATTRIBUTE
        and c.changes
        and all(ch.what == "shape" and (r := moved_dims(ch.old, ch.new)) and r <= lengths for ch in c.changes)
    ]
    shapes = merge(
        CauseKind.PARAMETER_SHAPE,
        f"{len(sized)} op(s) reading the concatenation changed size with it: the new input's length "
        "flows on into what reads it",
        [pending[i] for i in sized],
        hint=GROWING_STATE_HINT,
        sources=tuple(dict.fromkeys((*cause.sources, *(s for i in sized for s in pending[i].sources))))[:6],
    )
    return Recognized((cause, shapes), frozenset(added + regions + counts + sized))


RECOGNIZER = Recognizer("growing_list", _recognize)
