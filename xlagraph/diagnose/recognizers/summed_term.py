"""`parameter_added` of one more term in a sum over a container's items (`sum(f(p) for p in
self.prototypes.values())` once the dict gained an entry): the new input is one more item of the
kind the graph already reads, and what differs is its term and the sum's chain of adds (with the
scalar factors along it) re-paired around that term. The new input, that work, the tensors the
term saves for its backward and the constants the re-pairing swapped are one cause, not a
`structure`, an `output_added` and a `constant_value` of their own.

Two shapes of it: the term's work is the same as the other terms' (the matcher pairs it with one
of them and leaves no region that reads the new input: only the chain differs, in adds and
multiplies), or the term's ops are a region of their own that reads the new input, beside the
scalar add that puts it into the sum (a loss), the new input read like an input of its shape that
both graphs take (another item of the same container).
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._dataflow import downstream, opcodes
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]

# The ops of a sum's chain: each term added, scaled by its weight (`alpha` of `add`) or a mean's 1/n.
_CHAIN = frozenset({"add", "multiply", "subtract", "divide", "broadcast", "reshape"})


def _item_like(right: CanonicalComputation, params: tuple[str, ...], users: dict[str, list[str]]) -> bool:
    """Each new input has the shape of another input of the graph whose readers run the same ops:
    one more item of a container whose other items the graph reads already."""

    def reads(p: str) -> list[str]:
        return sorted(right.instruction(u).opcode for u in users.get(p, ()))

    others = [p for p in right.param_number if p not in params]
    return all(
        reads(p)
        and any(
            strip_layout(right.instruction(o).shape) == strip_layout(right.instruction(p).shape)
            and reads(o) == reads(p)
            for o in others
        )
        for p in params
    )


def _scalar(right: CanonicalComputation, name: str) -> bool:
    return strip_layout(right.instruction(name).shape).endswith("[]")


def _sums_scalars(right: CanonicalComputation, names: set[str]) -> bool:
    """Some `add` among `names` adds scalars: a term joining a sum (a loss), not a layer's work."""
    return any(right.instruction(n).opcode == "add" and _scalar(right, n) for n in names)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    added = [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_ADDED and not c.info]
    if len(added) != 1 or any(c.kind is CauseKind.PARAMETER_REMOVED for c in pending):
        return NOTHING
    right = evidence.right.entry
    users = users_of(right)
    params = pending[added[0]].right
    structures = [i for i, c in enumerate(pending) if c.kind is CauseKind.STRUCTURE]
    if not structures:
        return NOTHING
    cone = downstream(users, params)
    # Every region meets the new term: where the chain adds it, or the term's own ops.
    if not all(set(pending[i].right) & cone for i in structures):
        return NOTHING
    region = {n for i in structures for n in pending[i].right}
    # What the term saves for its backward (torch.compile's forward returns it): the term's too.
    saved = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.OUTPUT_ADDED
        and not c.left
        and (heads := [ch.right for ch in c.changes if ch.what == "output"])
        and set(heads) <= cone | set(params)
    ]
    # Only the chain re-paired, in the ops of a chain; or the term's ops of their own beside the
    # scalar add that sums them (a loss), with what the term saves for its backward (else a new
    # input read by work of its own is new_input's). Either way the new input is another item's
    # twin, a tensor: a Python scalar passed as data is the scalar recognizers'.
    readers = {u for p in params for u in users.get(p, ())}
    # (the new input's readers paired with another term's: the matcher took the term for a twin)
    repaired = (
        readers <= evidence.entry_match.keys()
        and not readers & region
        and all(
            len(pending[i].left) == len(pending[i].right) and opcodes(evidence, pending[i]) <= _CHAIN
            for i in structures
        )
    )
    if not (repaired or (saved and _sums_scalars(right, region))):
        return NOTHING
    if any(_scalar(right, p) for p in params) or not _item_like(right, params, users):
        return NOTHING
    # A constant the re-pairing swapped (a term's 1/n against another's weight 1): read by the chain.
    constants = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.CONSTANT_VALUE
        and c.right
        and all(set(users.get(n, ())) & region for n in c.right)
    ]
    first = pending[added[0]]
    summary = (
        f"{first.summary}, summed as one more term: an item of the kind the graph reads already, "
        f"its term's work and the sum's chain around it ({len(region)} instruction(s)) follow from it"
    )
    taken = [added[0], *structures, *saved, *constants]
    # The swapped constants are no change of the user's: their old/new values are not shown.
    changes = tuple(ch for i in (added[0], *structures, *saved) for ch in pending[i].changes)
    cause = merge(
        CauseKind.PARAMETER_ADDED, summary, [pending[i] for i in taken], hint=first.hint, changes=changes
    )
    return Recognized((cause,), frozenset(taken))


RECOGNIZER = Recognizer("summed_term", _recognize)
