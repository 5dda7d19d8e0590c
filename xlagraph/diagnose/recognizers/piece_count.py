"""`parameter_shape`: a concatenation that joins another number of pieces. A Python count decides
how many: the length of a list passed to `torch.cat` (crops of an image, a schedule's number of
views) or `t.repeat(n)`, which PyTorch/XLA lowers to a concatenation of `n` copies. The pieces'
inputs keep their shapes, so the diff sees only a concatenate whose operand list changed; what
the count changes after it (the batch the concatenation makes, the ops reading it) is the same
cause. Beside a cause of that size change, the concatenation is folded into it; alone (the
labels repeated per crop, synced before torch.compile's retrace for the list's new length), it
is named here, cited where the count is computed."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._causes import fold_into, merge, with_number_origin
from xlagraph.match.shapes import moved_dims

__all__ = ["RECOGNIZER"]

HINT = fix("parameter_shape.piece_count")


def _counts(evidence: Evidence, cause: Cause) -> tuple[int, int] | None:
    """(pieces in A, pieces in B) where the cause is only concatenates, paired in order, along
    the same dimension, each joining another number of pieces, all by the same change; else
    None."""
    a, b = evidence.left.entry, evidence.right.entry
    if cause.kind is not CauseKind.STRUCTURE or not cause.left or len(cause.left) != len(cause.right):
        return None
    moves = set()
    for x, y in zip(cause.left, cause.right, strict=True):
        if x not in a.operands or y not in b.operands:
            return None
        ix, iy = a.instruction(x), b.instruction(y)
        if ix.opcode != "concatenate" or iy.opcode != "concatenate":
            return None
        if ix.attribute("dimensions") != iy.attribute("dimensions"):
            return None
        moves.add((len(a.operands[x]), len(b.operands[y])))
    if len(moves) != 1:
        return None
    (move,) = moves
    return move if move[0] != move[1] else None


def _scaled_sizes(cause: Cause, old: int, new: int) -> bool:
    """Only sizes changed (a constant's value with its size: an `arange` of the rows), each
    dimension in the ratio of the counts (16 rows of 2 views -> 24 of 3): the ops after the
    concatenation, sized by the same count."""
    if not cause.attribute_only(*_SIZED):
        return False
    moves = [m for ch in cause.changes for m in moved_dims(ch.old.split(" ")[0], ch.new.split(" ")[0])]
    return bool(moves) and all(a * new == b * old for a, b in moves)


_SIZED = frozenset({"shape", "shape and value"})


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    found = [(i, m) for i, c in enumerate(pending) if (m := _counts(evidence, c))]
    if not found:
        return NOTHING
    (i, (old, new)), rest = found[0], [j for j, _ in found[1:]]
    said = (
        f"the concatenation at {', '.join(pending[i].sources[:1]) or 'the same place'} joins {new} "
        f"piece(s) where it joined {old}: a Python count (a list's length passed to torch.cat, a "
        "repeat count) changed"
    )
    sized = next(
        (j for j, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_SHAPE and not c.info), None
    )
    if sized is not None:  # the count is that size change: one cause
        return fold_into(pending, sized, [i, *rest], said)
    rest += [j for j, c in enumerate(pending) if _scaled_sizes(c, old, new)]
    cause = merge(CauseKind.PARAMETER_SHAPE, said, [pending[j] for j in (i, *rest)], hint=HINT)
    return Recognized((with_number_origin(cause),), frozenset([i, *rest]))


RECOGNIZER = Recognizer("piece_count", _recognize)
