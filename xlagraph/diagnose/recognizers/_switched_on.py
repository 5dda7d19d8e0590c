"""`conditional_work`'s option switched by a value: new scalar inputs that bring work of their
own, or that work gone with them (an option library code skips at 0)."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._causes import TAPS, merge, scalar_inputs, with_number_origin
from xlagraph.diagnose.recognizers._dataflow import downstream, opcodes, updated_inputs
from xlagraph.match.users import users_of
from xlagraph.opcodes import RANDOM

__all__ = ["switched_on"]


_SWITCH_HINT = fix("conditional_work.switched_on")


def switched_on(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    """New scalar inputs that bring work of their own (many ops only in B read them): a Python
    option that library code skips at 0.0 and runs otherwise (`F.cross_entropy(label_smoothing=s)`).
    Or the other way: the inputs and their work gone, the option annealed to exactly 0.0."""
    on = _switched(evidence, pending, on=True)
    return on if on.causes else _switched(evidence, pending, on=False)


def _switched(evidence: Evidence, pending: tuple[Cause, ...], on: bool) -> Recognized:
    # The side that runs the work: B where the option turns on, A where it turns off.
    side = evidence.right if on else evidence.left
    added, gone = (CauseKind.PARAMETER_ADDED, CauseKind.OUTPUT_REMOVED)
    if not on:
        added, gone = (CauseKind.PARAMETER_REMOVED, CauseKind.OUTPUT_ADDED)

    def names(c: Cause) -> tuple[str, ...]:
        return c.right if on else c.left

    def other(c: Cause) -> tuple[str, ...]:
        return c.left if on else c.right

    users = users_of(side.entry)
    taps = [i for i, c in enumerate(pending) if c.kind in TAPS]
    if any(pending[i].kind is gone for i in taps):
        return NOTHING  # results gone too: not an option switched
    matched = evidence.entry_match if on else evidence.entry_match_left
    picked, work = [], set()
    for i, c in enumerate(pending):
        if c.kind is added and scalar_inputs(evidence, c):
            reach = downstream(users, names(c))
            own = {n for n in reach if n not in matched}
            # Work spread over many small regions (AdamW's decay of each weight: a multiply
            # before an update the matcher pairs) counts by how much each region grew. Random
            # numbers are dropout's, switched by train()/eval() or p: a pattern of its own.
            grown = [
                k
                for k in pending
                if k.kind is CauseKind.STRUCTURE
                and len(names(k)) > len(other(k))
                and set(names(k)) & reach
                and not opcodes(evidence, k) & RANDOM
            ]
            if len(own) + sum(len(names(k)) - len(other(k)) for k in grown) >= _SWITCH_OPS:
                picked.append(i)
                work |= own | {n for k in grown for n in names(k)}
    if not picked:
        return NOTHING
    # Results only that side has are the option's only where they come from its work (what a
    # compiled forward saves for its backward) and update no input (weights trained from now on).
    entry = side.entry
    reach = downstream(users, [p for i in picked for p in names(pending[i])])
    kept = {n for i in taps for n in names(pending[i])} & set(entry.outputs)
    if not kept <= reach or updated_inputs(entry, sorted(kept)):
        return NOTHING
    # An option changes how a result both graphs return is computed (the loss, a weight's update);
    # work gone whose every result is gone with it made tensors once (state filled from a value).
    if not on and not any(o in matched for o in reach.intersection(entry.outputs)):
        return NOTHING
    picked += taps + [
        j
        for j, c in enumerate(pending)
        if j not in picked and c.kind is CauseKind.STRUCTURE and set(names(c)) & work
    ]
    n = sum(len(names(pending[i])) for i in picked if pending[i].kind is added)
    summary = (
        f"work that runs from this step on, switched on by {n} Python value(s) passed as data: an "
        "option library code skips at 0 (a weight decay, label smoothing, a loss term's weight) now set"
        if on
        else f"work that stops from this step on, switched off by {n} Python value(s) passed as data "
        "that reached 0: an option library code skips at 0 (a weight decay, label smoothing, a loss "
        "term's weight) annealed to exactly 0"
    )
    cause = merge(CauseKind.CONDITIONAL_WORK, summary, [pending[i] for i in picked], hint=_SWITCH_HINT)
    named = with_number_origin(cause)
    torch_option = bool(cause.sources) and all(s.startswith("torch/") for s in cause.sources)
    if not on and (
        (named is cause and not torch_option) or RANDOM.intersection(side.entry.core.opcodes_of(list(work)))
    ):
        # Work gone is an option at 0 where torch's own code skips it (label_smoothing, a weight
        # decay) or the user's line reads a number the script computes (a schedule), not where
        # a model's code stops reading a value; random work gone is dropout's pattern.
        return NOTHING
    return Recognized((named,), frozenset(picked))


# Ops only the new graph runs on the new values before it is work of its own, not a value read
# where the other graph read a constant.
_SWITCH_OPS = 8
