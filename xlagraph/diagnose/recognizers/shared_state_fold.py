"""A scalar of the user's that rides on new state's input, folded into that state's warm-up.

On the step an optimizer makes its state, the update reads new Python scalars (SGD's momentum
0.9). torch_xla uploads equal Python scalars once, so where one of the user's scalars has the same
value (an EMA's 0.9), the graph reads the user's value from the state's new input: the input the
user's value had in A is gone. That removal is the state's creation seen once more, expected with
it: folded into `state_init`, with the user's line (`shared_scalar` names such a merge between two
inputs both graphs have, which needs a fix).
"""

from __future__ import annotations

from collections import Counter

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers.shared_scalar import read_instead
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]


def _recognize(evidence: Evidence, everything: tuple[Cause, ...]) -> Recognized:
    if not evidence.entry_match:
        return NOTHING
    owner = next((i for i, c in enumerate(everything) if c.info and c.kind is CauseKind.STATE_INIT), None)
    if owner is None:
        return NOTHING
    new = set(everything[owner].right) & set(evidence.right.entry.param_number)
    params = evidence.left.entry.param_number
    folded = [
        i
        for i, c in enumerate(everything)
        if c.kind is CauseKind.PARAMETER_REMOVED
        and (removed := [n for n in c.left if n in params])
        and all(read_instead(evidence, q) in new or _read_alike(evidence, q, new) for q in removed)
    ]
    if not folded:
        return NOTHING
    n = sum(1 for i in folded for x in everything[i].left if x in params)
    state = everything[owner]
    summary = (
        f"{state.summary}; {n} scalar input(s) of A are read in B from a new state input of equal "
        "value (torch_xla uploads equal Python scalars once, e.g. an EMA's 0.9 and SGD's momentum 0.9)"
    )
    # Still the state's expected warm-up: kind, hint and `info` kept.
    merged = merge(state.kind, summary, [state, *(everything[i] for i in folded)], state.hint, info=True)
    return Recognized((merged,), frozenset([owner, *folded]))


def _read_alike(evidence: Evidence, param: str, new: set[str]) -> bool:
    """Where the matcher left `param`'s readers unpaired (they read another input now, and the
    state's update reads it too): each reader of A's scalar input has a twin in B (same opcode
    and shape) that reads one new scalar state input of the same type, the same for all."""
    left, right = evidence.left.entry, evidence.right.entry
    shape = strip_layout(left.instruction(param).shape)
    readers = users_of(left).get(param, ())
    for p in new:
        if strip_layout(right.instruction(p).shape) != shape or not shape.endswith("[]"):
            continue
        theirs = Counter(_signature(right, w) for w in users_of(right).get(p, ()))
        if readers and not Counter(_signature(left, u) for u in readers) - theirs:
            return True
    return False


def _signature(comp, name: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    ins = comp.instruction(name)
    return ins.opcode, strip_layout(ins.shape)


RECOGNIZER = Recognizer("shared_state_fold", _recognize)
