"""Differences that follow from work one graph does and the other does not (a module run under an
`if` on some steps only), though they are not that work: `conditional_work` takes them with it.

Two kinds. Sizes inside library code that count what the work brings (the stacked norms of a
clip over the skipped module's gradients too, an optimizer's per-weight ops the matching paired
with another weight's), found as changed ops that read, or are read by, the work's instructions.
And an input whose length makes up for the work's tokens (a text-only batch packed to the length
an image batch reaches once its image tokens are concatenated in front): the input reaches, in a
few ops, a concatenation the work feeds, and the other graph's input is as long as that result.
And outputs that come and go with the work (`taps_beside`): gradients it adds to before they are
returned, the input's gradient it makes. And the residue of a branch's work that carries no line
of its own (`branch_residue`): an input only that work reads (the divisor of a mean the other
branch does not take), and autograd's ops that read the work past a reshape or a broadcast (the
backward of a division only one branch makes).
"""

from __future__ import annotations

from collections.abc import Collection

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import Evidence
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._dataflow import RESTATES, downstream
from xlagraph.diagnose.shapes import dim_sizes, shape_of
from xlagraph.match.users import users_of

__all__ = ["branch_residue", "length_made_up", "sizes_beside", "taps_beside"]

# How far (ops) an input may be from the concatenation it joins: a reshape, the embedding's
# index conversion and gather, its reshape back to [batch, length, hidden].
_REACH = 6


def sizes_beside(evidence: Evidence, cause: Cause, left: Collection[str], right: Collection[str]) -> bool:
    """A size change in library code only (no line of the user's, which a size the user passes
    would cite) whose ops, on one side or the other, read or are read by the work's (`left`:
    A's names, `right`: B's)."""
    if not cause.attribute_only("shape") or any(is_user_location(s) for s in cause.sources):
        return False
    return any(
        _touches(canon.entry, names, work)
        for canon, names, work in ((evidence.left, cause.left, left), (evidence.right, cause.right, right))
    )


def length_made_up(evidence: Evidence, cause: Cause, left: Collection[str], right: Collection[str]) -> bool:
    """An input that changed shape, which on the side of the work reaches, within a few ops, a
    concatenation of the work's whose leading dimensions are the other side's input's: both graphs
    feed the model one length, made of the input alone on one side and of the input and the
    work's result on the other."""
    if cause.kind is not CauseKind.PARAMETER_SHAPE or len(cause.left) != 1 or len(cause.right) != 1:
        return False
    sides = (
        (evidence.left.entry, cause.left[0], left, evidence.right.entry, cause.right[0]),
        (evidence.right.entry, cause.right[0], right, evidence.left.entry, cause.left[0]),
    )
    for entry, name, work, other, other_name in sides:
        want = dim_sizes(shape_of(other, other_name))
        if not want or name not in entry.computation.by_name:
            continue
        for join in _concatenations(entry, name, work):
            got = dim_sizes(shape_of(entry, join))
            if got and got[: len(want)] == want:
                return True
    return False


def _concatenations(entry: CanonicalComputation, start: str, work: Collection[str]) -> list[str]:
    """The concatenations among the work's ops within `_REACH` ops downstream of `start` that also
    read an op of the work not computed from `start` (the work's own result joined to it)."""
    users = users_of(entry)
    seen: set[str] = set()
    front = [start]
    for _ in range(_REACH):
        front = [u for n in front for u in users.get(n, ()) if u not in seen]
        seen.update(front)
    return [
        n
        for n in seen
        if n in work
        and entry.instruction(n).opcode == "concatenate"
        and any(o in work and o not in seen for o in entry.operands.get(n, ()))
    ]


def _touches(entry: CanonicalComputation, names: tuple[str, ...], work: Collection[str]) -> bool:
    users = users_of(entry)
    return any(
        n in entry.computation.by_name
        and any(o in work for o in (*entry.operands.get(n, ()), *users.get(n, ())))
        for n in names
    )


_RESIDUE = (CauseKind.STRUCTURE, CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED)


def branch_residue(evidence: Evidence, cause: Cause, left: Collection[str], right: Collection[str]) -> bool:
    """A region or an input of one side, with no line of the user's (a line would be a change of
    its own), that belongs to the work (`left`: A's names, `right`: B's): inputs and constants
    that only the work reads, or ops that read the work's results past reshapes and broadcasts
    (an input's readers are its own: one read elsewhere too is not the work's alone)."""
    if cause.kind not in _RESIDUE or cause.info or any(is_user_location(s) for s in cause.sources):
        return False
    for canon, names, work in ((evidence.left, cause.left, left), (evidence.right, cause.right, right)):
        entry = canon.entry
        found = {n for n in names if n in entry.computation.by_name}
        if not found or not work:
            continue
        users = users_of(entry)
        if all(users.get(n) and all(u in work or u in found for u in users[n]) for n in found):
            return True
        if cause.kind is CauseKind.STRUCTURE and any(_reads(entry, n, work) for n in found):
            return True
    return False


def _reads(entry: CanonicalComputation, name: str, work: Collection[str]) -> bool:
    """`name` reads an op of the work, directly or through ops that only restate a value."""
    stack, seen = list(entry.operands.get(name, ())), set()
    while stack:
        n = stack.pop()
        if n in work:
            return True
        if n in seen or entry.instruction(n).opcode not in RESTATES:
            continue
        seen.add(n)
        stack += entry.operands.get(n, ())
    return False


def taps_beside(evidence: Evidence, cause: Cause, left: Collection[str], right: Collection[str]) -> bool:
    """Outputs added or removed, with no line of the user's, that read or are read by the work's
    ops on their side, or are computed from them (`left`: A's names, `right`: B's): a gradient
    returned as it is in one graph and with the work's term added in the other, the input's
    gradient only the work makes. They come and go with the work, not with a tensor kept alive."""
    if cause.kind not in (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED) or cause.info:
        return False
    if any(is_user_location(s) for s in cause.sources):
        return False
    return any(
        _touches(canon.entry, names, work) or set(names) & downstream(users_of(canon.entry), work)
        for canon, names, work in ((evidence.left, cause.left, left), (evidence.right, cause.right, right))
        if names and work
    )
