"""`output_added` / `output_removed` that read an input of their own: a tensor kept alive (or
pulled into the step) together with what it is computed from, such as a Python value passed as
data only on that step. The new input is part of the extra output, not a cause of its own.
Where the user's code puts that tensor into a list that outlives the step (`keep.append(features
.detach())`), that line is what keeps it alive: cited first."""

from __future__ import annotations

from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._user_flow import kept_in_lists
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]


def _with_inputs(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    out: list[Cause] = []
    consumed: set[int] = set()
    for out_kind, param_kind, side in (
        (CauseKind.OUTPUT_ADDED, CauseKind.PARAMETER_ADDED, "right"),
        (CauseKind.OUTPUT_REMOVED, CauseKind.PARAMETER_REMOVED, "left"),
    ):
        outputs = [i for i, c in enumerate(pending) if c.kind is out_kind]
        params = [i for i, c in enumerate(pending) if c.kind is param_kind]
        if len(outputs) != 1 or not params:
            continue
        comp = (evidence.right if side == "right" else evidence.left).entry
        users = users_of(comp)
        cone = set(getattr(pending[outputs[0]], side))
        inside = [
            i for i in params if all(u in cone for p in getattr(pending[i], side) for u in users.get(p, ()))
        ]
        if len(inside) != len(params):
            continue
        merged = pending[outputs[0]]
        extra = tuple(p for i in inside for p in getattr(pending[i], side))
        merged = replace(
            merged,
            summary=f"{merged.summary}, computed from {len(extra)} input(s) of its own",
            changes=merged.changes + tuple(ch for i in inside for ch in pending[i].changes),
            **{side: getattr(merged, side) + extra},
        )
        out.append(merged)
        consumed.update([outputs[0], *inside])
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


_OUTPUTS = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)


def _kept(cause: Cause) -> Cause:
    """`cause` with the lines that put its tensor into a list first, where the user's code does."""
    user = [s for s in cause.sources if is_user_location(s)][:2]
    kept = [k for s in user for k in kept_in_lists(s)]
    if not kept:
        return cause
    return replace(cause, sources=tuple(dict.fromkeys([*kept, *cause.sources]))[:6])


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    found = _with_inputs(evidence, pending)
    causes = [_kept(c) for c in found.causes]
    consumed = set(found.consumed)
    for i, c in enumerate(pending):
        if i not in consumed and c.kind in _OUTPUTS and (kept := _kept(c)) is not c:
            causes.append(kept)
            consumed.add(i)
    return Recognized(tuple(causes), frozenset(consumed)) if causes else NOTHING


RECOGNIZER = Recognizer("kept_alive", _recognize)
