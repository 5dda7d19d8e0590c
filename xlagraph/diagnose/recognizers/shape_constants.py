"""Constants that follow a changed input shape are part of that change.

A sequence length of 12 that becomes 9 also changes the loop bounds and offsets lowered from it
(`length - 1`: 11 -> 8), the way a changed batch changes the `1/batch` of a mean (folded where
instructions are compared). These are not Python scalars of the user's: they are folded into the
`parameter_shape` cause, which names the input and the fix.

So are regions that differ only by slicing ops: `mask[:, :, :t, :t]` of a buffer made for the
longest length is no op at that length and a `slice` at any shorter one (and its gradient, the
slice's backward, a pad of the gradient into zeros there and no op at the full length); and so
are concatenates of one operand repeated as many times as a changed dimension (a mask repeated
per batch row).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from itertools import combinations_with_replacement
from math import prod

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.numbers import dim_changes, is_number, payload
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.ir import Instruction

__all__ = ["RECOGNIZER"]

# How far a derived bound may sit from the dimension itself (`n - 1`, `n + 1`, `n - 2`).
_NEAR = 2


def _follows(old: str, new: str, dims: set[tuple[int, int]]) -> bool:
    """`s64[] 11` -> `s64[] 8` when a dimension went 12 -> 9: the same step, next to the size;
    or in proportion to the changed dimensions (an image's 4x4 = 16 pooled cells are 5x4 = 20 when
    its height goes 32 -> 40, 6x5 = 30 when both grow, 7x7 = 49 for a square one 32 -> 28)."""
    o, n = payload(old), payload(new)
    if not (is_number(o) and is_number(n)) or not float(o).is_integer() or not float(n).is_integer():
        return False  # (inf and nan are numbers, not integers)
    a, b = int(float(o)), int(float(n))
    if a == b:
        return False
    if any(a - b == x - y and abs(a - x) <= _NEAR for x, y in dims):
        return True
    return any(
        a * prod(y for _, y in group) == b * prod(x for x, _ in group)
        for k in range(1, 4)
        for group in combinations_with_replacement(sorted(dims), k)
    )


_SLICING = frozenset({"slice", "dynamic-slice", "pad", "reshape", "bitcast", "copy"})


# Ops that only spread a constant (`broadcast(reshape(constant(0)))`): a pad's filler, a mask.
_FILLING = frozenset({"constant", "broadcast", "reshape"})


def _filler(by_name: Mapping[str, Instruction], name: str) -> bool:
    """`name` is a constant, or a constant spread by broadcasts and reshapes only."""
    seen: set[str] = set()
    stack = [name]
    while stack:
        ins = by_name.get(stack.pop())
        if ins is None or ins.opcode not in _FILLING:
            return False
        if ins.name not in seen:
            seen.add(ins.name)
            stack += ins.operands
    return True


def _unselect(by_name: Mapping[str, Instruction], ins: Instruction) -> bool:
    """torch_xla's `unselect`, how it lowers a slice's backward (`slice_backward`, `slice_scatter`):
    `select(pad(true, false), pad(grad, 0), zeros)`, a pad of the gradient into the sliced tensor's
    zeros: a slicing op itself, which a slice of the whole length does not need."""
    if ins.opcode != "select" or len(ins.operands) != 3:
        return False
    mask, picked = by_name.get(ins.operands[0]), by_name.get(ins.operands[1])
    return (
        mask is not None
        and picked is not None
        and mask.opcode == picked.opcode == "pad"
        and mask.attribute("padding") == picked.attribute("padding")
        and all(_filler(by_name, o) for o in mask.operands)
        and _filler(by_name, ins.operands[2])
    )


def _slices_only(evidence: Evidence, cause: Cause) -> bool:
    """The two sides of a region run the same ops but for slicing ones (an unselect counted as
    one, the constants it pads with as none)."""
    left: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for canon, ins in evidence.instructions(cause):
        comp = canon.computations.get(cause.computation, canon.entry)
        by_name = comp.computation.by_name
        if _filler(by_name, ins.name):
            continue
        (left if canon is evidence.left else right)["pad" if _unselect(by_name, ins) else ins.opcode] += 1
    extra = (left - right) + (right - left)
    return bool(extra) and set(extra) <= _SLICING


def _repeats_a_size(evidence: Evidence, cause: Cause, dims: set[tuple[int, int]]) -> bool:
    """A region of concatenates of one operand repeated as many times as a changed dimension
    (`mask[None].repeat(batch, 1, 1)` or `torch.cat([row] * batch)` sized from the batch, as
    transformers' mask helpers do): the count follows the input's shape, like a lowered bound."""
    sides: tuple[list[tuple[str, ...]], list[tuple[str, ...]]] = ([], [])
    for canon, ins in evidence.instructions(cause):
        if ins.opcode != "concatenate" or len(set(ins.operands)) != 1:
            return False
        sides[canon is evidence.right].append(ins.operands)
    left, right = sides
    return (
        bool(left)
        and len(left) == len(right)
        and all((len(a), len(b)) in dims for a, b in zip(left, right, strict=True))
    )


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    shapes = [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_SHAPE]
    if len(shapes) != 1:
        return NOTHING
    host = pending[shapes[0]]
    dims = {(int(x), int(y)) for ch in host.changes for x, y in dim_changes(ch.old, ch.new)}
    followers = [
        i
        for i, c in enumerate(pending)
        if (
            c.kind is CauseKind.CONSTANT_VALUE
            and c.changes
            and all(ch.what == "value" and _follows(ch.old, ch.new, dims) for ch in c.changes)
        )
        or (
            c.kind is CauseKind.STRUCTURE
            and (_slices_only(evidence, c) or _repeats_a_size(evidence, c, dims))
        )
    ]
    if not dims or not followers:
        return NOTHING
    merged = merge(
        CauseKind.PARAMETER_SHAPE,
        host.summary,
        [host] + [pending[i] for i in followers],
        hint=host.hint,
        # (a slicing region's opcode pairs, `select -> reshape`, are no input's shape change)
        changes=host.changes
        + tuple(
            ch for i in followers if pending[i].kind is not CauseKind.STRUCTURE for ch in pending[i].changes
        ),
        sources=host.sources,
        library=host.library,
    )
    return Recognized((), frozenset([shapes[0], *followers]), (merged,))


RECOGNIZER = Recognizer("shape_constants", _recognize)
