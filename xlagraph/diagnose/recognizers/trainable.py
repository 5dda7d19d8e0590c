"""Parameters switched to (or from) training: `requires_grad_(True)` on a frozen encoder.

The step gains the encoder's backward and one update per parameter: outputs added, each `p - lr *
grad` of an input both graphs read. That is not a tensor kept alive: it is the set of trained
parameters that changed, once per switch. The user's `requires_grad` line is cited."""

from __future__ import annotations

import re
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.common import shape_of
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._dataflow import updated_inputs
from xlagraph.diagnose.recognizers._source import lines_matching, source_text, user_files
from xlagraph.match.bottom_up import users_of

__all__ = ["RECOGNIZER"]

_REQUIRES_GRAD = re.compile(r"\brequires_grad(_\s*\(|\s*=[^=])")
_NEW = (CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED)
HINT = fix("trainable.requires_grad")


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    out: list[Cause] = []
    consumed: set[int] = set()
    # Inputs both graphs take (paired, and not among those a cause calls new) that the other
    # graph reads without updating them.
    new = {n for c in pending if c.kind in _NEW for n in (*c.left, *c.right)}
    left, right = evidence.left.entry, evidence.right.entry
    # Each side's inputs to their counterparts: only inputs are looked up (the values of
    # `updated_inputs`), so only they are kept (not every pair of the matching, twice).
    match, lparams = evidence.entry_match, left.param_number
    a_of = {
        b: a for b in right.param_number if (a := match.get(b)) is not None and a not in new and b not in new
    }
    b_of = {a: b for b, a in match.items() if a in lparams and a not in new and b not in new}
    trained_a = set(updated_inputs(left, left.outputs).values())
    trained_b = set(updated_inputs(right, right.outputs).values())
    for kind, new_inputs, side, word in (
        (CauseKind.OUTPUT_ADDED, CauseKind.PARAMETER_ADDED, "right", "True"),
        (CauseKind.OUTPUT_REMOVED, CauseKind.PARAMETER_REMOVED, "left", "False"),
    ):
        comp, twin, trained = (right, a_of, trained_a) if side == "right" else (left, b_of, trained_b)
        for i, c in enumerate(pending):
            if c.kind is not kind:
                continue
            heads = [ch.right if side == "right" else ch.left for ch in c.changes if ch.what == "output"]
            # An update of an input the other graph does not take at all counts too, beside one of
            # a parameter both read: the optimizer state (Adam's moments) of a parameter frozen since
            # is no longer read. (A layer added or removed takes its weights with it: no twin.)
            updated = updated_inputs(comp, heads)
            frozen = [o for o, p in updated.items() if p in twin and twin[p] not in trained]
            updates = frozen + [o for o, p in updated.items() if p in new] if frozen else []
            # An optimizer's fresh state for the newly trained parameters (Adam's moments, of their
            # shapes, and its scalar step counts) comes with their updates.
            shapes = {shape_of(comp, p) for o, p in updated.items() if o in updates}
            state = [h for h in heads if h not in updates and updates and _state_like(comp, h, shapes)]
            if not heads or 2 * (len(updates) + len(state)) < len(heads) or 4 * len(updates) < len(state):
                continue
            lines = lines_matching(user_files(evidence), _REQUIRES_GRAD, limit=8)
            if not lines:
                continue  # no switch in the user's code: another pattern (an optimizer's new group)
            lines.sort(key=lambda loc: word not in source_text(loc))
            # Inputs read only inside the new work (a step count, a scale) come with it.
            users, cone = users_of(comp), set(getattr(c, side))
            inside = [
                k
                for k, d in enumerate(pending)
                if d.kind is new_inputs and all(u in cone for n in getattr(d, side) for u in users.get(n, ()))
            ]
            out.append(
                replace(
                    c,
                    summary=(
                        f"B also trains {len(updates)} parameter(s) A only reads: {c.summary}"
                        if side == "right"
                        else f"B no longer trains {len(updates)} parameter(s) A trains: {c.summary}"
                    ),
                    hint=HINT,
                    sources=tuple(dict.fromkeys([*lines[:2], *c.sources]))[:6],
                    changes=c.changes + tuple(ch for k in inside for ch in pending[k].changes),
                    **{side: getattr(c, side) + tuple(n for k in inside for n in getattr(pending[k], side))},
                )
            )
            consumed.update([i, *inside])
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


def _state_like(comp, name: str, shapes: set[str]) -> bool:  # type: ignore[no-untyped-def]
    shape = shape_of(comp, name)
    return shape in shapes or shape.split("{")[0].endswith("[]")


RECOGNIZER = Recognizer("trainable", _recognize)
