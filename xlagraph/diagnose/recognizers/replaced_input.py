"""A weight replaced by one made from another: the input it was is read no more, one cause with it.

`model.lm_head.weight = nn.Parameter(emb.detach().clone())` (then `add_param_group` with its own
learning rate): the step that makes the new weight computes it from the embedding, so the old head
weight is no longer an input, and every op that read it now reads the embedding's input, with the
new group's learning rate as a new input. The input B no longer takes is not a change of its own:
where A read it, B reads another input of the same shape (the one it was copied from). Folded into
the `parameter_added` cause whose region holds those readers; an input dropped otherwise (a state
reset to `torch.zeros`, a tensor the step stops reading) stays `parameter_removed`.
"""

from __future__ import annotations

from xlagraph.canonical.model import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import fold_into
from xlagraph.diagnose.recognizers._dataflow import restated
from xlagraph.diagnose.shapes import shape_of
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]


def _read_instead(evidence: Evidence, name: str) -> tuple[set[str], set[str]] | None:
    """Where A read input `name`: B's paired readers and the inputs they read in its place, each
    paired with another input of A of the same shape; None unless every reader is such a one."""
    left, right = evidence.left.entry, evidence.right.entry
    to_right = evidence.entry_match_left
    readers: set[str] = set()
    inputs: set[str] = set()
    for user in users_of(left).get(name, ()):
        other = to_right.get(user)
        if other is None:
            return None
        ops_l, ops_r = left.operands.get(user, ()), right.operands.get(other, ())
        slots = [k for k, o in enumerate(ops_l) if o == name]
        if not slots or len(ops_r) != len(ops_l):
            return None
        for k in slots:
            y = restated(right, ops_r[k])
            was = evidence.entry_match.get(y)
            if not _same_input(left, right, name, y, was):
                return None
            inputs.add(y)
        readers.add(other)
    return (readers, inputs) if readers else None


def _same_input(
    left: CanonicalComputation, right: CanonicalComputation, name: str, y: str, was: str | None
) -> bool:
    """`y` is an input of B paired with another input of A, of the shape `name` had."""
    return (
        y in right.param_number
        and was is not None
        and was != name
        and was in left.param_number
        and shape_of(right, y) == shape_of(left, name)
    )


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    left = evidence.left.entry
    for i, c in enumerate(pending):
        if c.kind is not CauseKind.PARAMETER_REMOVED or not c.left or c.right:
            continue
        if not all(n in left.param_number for n in c.left):
            continue
        found = [_read_instead(evidence, n) for n in c.left]
        if any(f is None for f in found):
            continue
        readers = set().union(*(f[0] for f in found if f))
        inputs = set().union(*(f[1] for f in found if f))
        host = next(
            (
                j
                for j, p in enumerate(pending)
                if p.kind is CauseKind.PARAMETER_ADDED and readers & set(p.right)
            ),
            None,
        )
        if host is None:
            continue
        numbers = evidence.right.entry.param_number
        was = ", ".join(f"input {left.param_number[n]}" for n in c.left)
        now = ", ".join(f"input {numbers[y]}" for y in sorted(inputs, key=numbers.__getitem__))
        what = (
            f"{was} of A is read no more: B reads {now} in its place (a weight replaced by one made "
            "from another)"
        )
        return fold_into(pending, host, [i], what)
    return NOTHING


RECOGNIZER = Recognizer("replaced_input", _recognize)
