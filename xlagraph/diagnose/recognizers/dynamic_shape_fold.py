"""`dynamic_shape` (final): a scalar input that a data-made count merged with another, or split
from it. A value that follows the count (a mean's divisor: 1/n or n) is a Python scalar torch_xla
uploads as an input; where it happens to equal another Python scalar of the step (`SCALE = 5.0` at
5 matches), torch_xla makes one input of the two (its scalar data cache). So at a count that
meets such a scalar the graph takes one input fewer (merge), and at the next count, which does
not, one input more again (split). `new_input` names that `parameter_removed` or
`parameter_added` before `dynamic_shape` names the count; this folds it into the count's cause,
which explains it.

Evidence, merge: a `dynamic_shape` cause and a `parameter_removed` of scalar inputs only, whose
readers' counterparts in B all read one kept scalar input of the same type; that input is read in
B at the new count's size, and its counterpart in A (an input of its own there) at the old
count's. Split, the same seen from the other graph: a `parameter_added` of scalar inputs only
(those with no counterpart in A), whose cause's readers in A all read one kept scalar input of
the same type, read in A at the old count's size; in B that input's counterpart or an added one
is read at the new count's.
"""

from __future__ import annotations

from dataclasses import replace

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.shapes import dim_sizes
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]


def _dims(shape: str) -> set[int]:
    return set(dim_sizes(shape) or ())


def _counts(cause: Cause) -> tuple[set[int], set[int]]:
    """The first dimension of each changed input shape, before and after: the data-made counts."""
    changes = [ch for ch in cause.changes if ch.what == "shape"]
    return (
        {d[0] for ch in changes if (d := dim_sizes(ch.old))},
        {d[0] for ch in changes if (d := dim_sizes(ch.new))},
    )


def _reads_sized(comp: CanonicalComputation, param: str, counts: set[int]) -> bool:
    """`param` is read by an instruction one of whose dimensions is one of `counts`."""
    return any(_dims(comp.instruction(u).shape) & counts for u in users_of(comp).get(param, ()))


def _scalar_inputs_read(comp: CanonicalComputation, readers: list[str], dtypes: set[str]) -> set[str]:
    """The inputs of `comp` of one of `dtypes` that `readers` read."""
    return {
        o
        for u in readers
        for o in comp.operands[u]
        if o in comp.param_number and strip_layout(comp.instruction(o).shape) in dtypes
    }


def _merged_count_scalar(evidence: Evidence, shape: Cause, cause: Cause) -> bool:
    """A scalar input removed beside a data-made count: its readers' counterparts in B read a kept
    scalar of the same type, the one that B also reads at the new count's size (a mean's divisor,
    whose value is the count) and A read, as its own input, at the old count's. torch_xla makes
    one input of equal Python scalars, so the count that happens to equal another scalar (a
    scale of 5.0 and 5 matches) shares its input: the input count follows from the count."""
    if cause.kind is not CauseKind.PARAMETER_REMOVED or not evidence.entry_match:
        return False
    left, right = evidence.left.entry, evidence.right.entry
    gone = [p for p in cause.left if p in left.param_number]
    if not gone or any(not strip_layout(left.instruction(p).shape).endswith("[]") for p in gone):
        return False
    dtypes = {strip_layout(left.instruction(p).shape) for p in gone}
    readers = [u for u in cause.right if u in right.operands]
    kept = _scalar_inputs_read(right, readers, dtypes)
    if not readers or len(kept) != 1:
        return False
    (mine,) = kept
    theirs = evidence.entry_match.get(mine, "")
    old, new = _counts(shape)
    return (
        theirs in left.param_number
        and theirs not in gone
        and _reads_sized(right, mine, new - old)
        and _reads_sized(left, theirs, old - new)
    )


def _split_count_scalar(evidence: Evidence, shape: Cause, cause: Cause) -> bool:
    """A scalar input added beside a data-made count: the merge of `_merged_count_scalar` seen
    from the other graph. In A one scalar input served both the count's value (read at the old
    count's size) and an equal Python scalar; at the new count they differ and B takes them as
    two inputs, one of which B reads at the new count's size."""
    if cause.kind is not CauseKind.PARAMETER_ADDED or not evidence.entry_match:
        return False
    left, right = evidence.left.entry, evidence.right.entry
    added = [p for p in cause.right if p in right.param_number and p not in evidence.entry_match]
    if not added or any(not strip_layout(right.instruction(p).shape).endswith("[]") for p in added):
        return False
    dtypes = {strip_layout(right.instruction(p).shape) for p in added}
    readers = [u for u in cause.left if left.operands.get(u)]
    kept = _scalar_inputs_read(left, readers, dtypes)
    if not readers or len(kept) != 1:
        return False
    (theirs,) = kept
    mine = evidence.entry_match_left.get(theirs, "")
    old, new = _counts(shape)
    return (
        mine in right.param_number
        and mine not in added
        and _reads_sized(left, theirs, old - new)
        and any(_reads_sized(right, p, new - old) for p in (mine, *added))
    )


# Each direction: the test of a cause beside the count, and what the summary adds.
_DIRECTIONS = (
    (
        _merged_count_scalar,
        "fewer: a value that follows the count (a mean's divisor) equals another Python scalar at "
        "this count, and torch_xla makes one input of equal scalars",
    ),
    (
        _split_count_scalar,
        "more: a value that follows the count (a mean's divisor) equalled another Python scalar at "
        "the old count, where torch_xla made one input of the two, and differs from it at this one",
    ),
)


def _fold(evidence: Evidence, causes: tuple[Cause, ...]) -> Recognized:
    """Final: a removed or added scalar input that follows from a data-made count
    (`_merged_count_scalar`, `_split_count_scalar`) is folded into that count's cause (named by
    `new_input` before this cause was)."""
    for i, shape in enumerate(causes):
        if shape.kind is not CauseKind.DYNAMIC_SHAPE:
            continue
        for follows, what in _DIRECTIONS:
            merged = [k for k, c in enumerate(causes) if follows(evidence, shape, c)]
            if not merged:
                continue
            # Instructions taken over; the shape change's lines and changes stay the cause's own.
            folded = merge(CauseKind.DYNAMIC_SHAPE, shape.summary, [shape, *(causes[k] for k in merged)])
            cause = replace(
                folded,
                summary=f"{shape.summary}; {len(merged)} scalar input(s) {what}",
                hint=shape.hint,
                changes=shape.changes,
                sources=shape.sources,
            )
            return Recognized((cause,), frozenset({i, *merged}))
    return NOTHING


RECOGNIZER = Recognizer("dynamic_shape_fold", _fold)
