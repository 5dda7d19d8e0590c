"""A pipeline stage whose window moved over a stack of look-alike blocks: one `parameter_added`.

A middle stage that holds blocks 2-3 of a stack in A and blocks 1-2 in B gained a block in front
and lost its look-alike at the back (`inserted_run.shifted_blocks` pairs the block both keep with
itself and leaves the other two unpaired). The inputs B takes more and those A took are one root
reason, the split that moved, and so is the work that reads them: the instructions the matcher
paired across the blocks (a GELU's 0.5 with another block's 1, a layer norm's gradient with
another one's) differ only because the blocks run in another order.

Evidence: one `parameter_added` and one `parameter_removed`, all of whose inputs are weights the
step updates, beside weights both graphs keep (less the inputs the other graph takes at the same
number with the same shape: the stage's activation and received gradient), the block gained at
one end of the kept ones and the block lost at the other (a window that moved, not a block
replaced in place). Look-alike or not: a stack of blocks of other hidden sizes moves the same way
(`inserted_run.shifted_weights`). The `structure`, `attribute` and `constant_value` differences
folded are those whose instructions are all work of the blocks' weights on their side (downstream
of them, or read only by such work: constants, shapes, the received gradient's reshapes).
Anything else stays a cause of its own.
"""

from __future__ import annotations

from xlagraph.canonical.model import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._dataflow import downstream, updated_inputs
from xlagraph.diagnose.shapes import shape_of
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]

_HINT = fix("parameter_added.layer")
_RESIDUE = (CauseKind.STRUCTURE, CauseKind.ATTRIBUTE, CauseKind.CONSTANT_VALUE)


def _weights(comp: CanonicalComputation) -> set[str]:
    return set(updated_inputs(comp, comp.outputs).values())


def _work(comp: CanonicalComputation, weights: set[str]) -> set[str]:
    """The instructions downstream of the weights, and those that only feed them (constants,
    shapes, the received gradient's reshapes), walked from the results back."""
    users = users_of(comp)
    work = downstream(users, weights)
    for ins in reversed(comp.computation.instructions):
        n = ins.name
        if n not in work and (u := users.get(n)) and all(x in work for x in u):
            work.add(n)
    return work


def _inputs(comp: CanonicalComputation, names: tuple[str, ...]) -> list[str]:
    return sorted((n for n in names if n in comp.param_number), key=comp.param_number.__getitem__)


def _listed(comp: CanonicalComputation, names: list[str]) -> str:
    return fmt_list([f"input {comp.param_number[p]}: {shape_of(comp, p)}" for p in names])


def _in_front(comp: CanonicalComputation, block: list[str], others: set[str]) -> bool | None:
    """Whether `block`'s inputs all come before `others` (torch_xla numbers a step's inputs as it
    first reads them, JAX by argument), after them (False), or neither (None)."""
    mine = [comp.param_number[p] for p in block]
    kept = [comp.param_number[p] for p in others]
    if max(mine) < min(kept):
        return True
    if min(mine) > max(kept):
        return False
    return None


def _shifted(comp: CanonicalComputation, other: CanonicalComputation, names: set[str]) -> set[str]:
    """`names` less those `other` takes an input of the same shape for at the same number."""
    at = {n: shape_of(other, p) for p, n in other.param_number.items()}
    return {p for p in names if at.get(comp.param_number[p]) != shape_of(comp, p)}


def _end(front: bool) -> str:
    return "in front of the blocks both keep" if front else "behind the blocks both keep"


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    added = [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_ADDED]
    removed = [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_REMOVED]
    if len(added) != 1 or len(removed) != 1:
        return NOTHING
    left, right = evidence.left.entry, evidence.right.entry
    gained = _inputs(right, pending[added[0]].right)
    lost = _inputs(left, pending[removed[0]].left)
    wl, wr = _weights(left), _weights(right)
    if len(gained) < 2 or not lost or not (set(gained) <= wr and set(lost) <= wl):
        return NOTHING
    # The block both keep: the other weights, less those the other graph takes at the same number
    # with the same shape (the stage's activation and received gradient, which a step's outputs
    # also "update"; the gained or lost block shifts the kept one's numbers).
    kept_a = _shifted(left, right, wl - set(lost))
    kept_b = _shifted(right, left, wr - set(gained))
    if not kept_a or not kept_b:
        return NOTHING  # no block both keep: another model, not a window that moved
    # A window that moved: the block gained at one end of the kept ones, the block lost at the other.
    front_b = _in_front(right, gained, kept_b)
    front_a = _in_front(left, lost, kept_a)
    if front_b is None or front_a is None or front_b == front_a:
        return NOTHING
    alike = sorted(shape_of(right, p) for p in gained) == sorted(shape_of(left, p) for p in lost)
    work_l, work_r = _work(left, wl), _work(right, wr)
    residue = [
        i
        for i, c in enumerate(pending)
        if c.kind in _RESIDUE
        and c.computation in ("", left.computation.name)
        and (c.left or c.right)
        and set(c.left) <= work_l
        and set(c.right) <= work_r
    ]
    parts = [pending[added[0]], pending[removed[0]], *(pending[i] for i in residue)]
    other = "a look-alike block" if alike else "another block"
    summary = (
        f"the stage holds other blocks of a stack: B takes {len(gained)} inputs of a block A does not "
        f"run, {_end(front_b)} ({_listed(right, gained)}), and A took {len(lost)} of {other} B does not "
        f"run, {_end(front_a)} ({_listed(left, lost)}): a pipeline split that moved"
    )
    if alike:
        summary += (
            " (the dumps alone cannot tell which of two look-alike blocks is the one both keep; the inputs "
            "are paired as a block gained in front)"
        )
    cause = merge(
        CauseKind.PARAMETER_ADDED,
        summary,
        parts,
        hint=_HINT,
        computation=pending[added[0]].computation,
    )
    return Recognized((cause,), frozenset([added[0], removed[0], *residue]))


RECOGNIZER = Recognizer("shifted_stage", _recognize)
