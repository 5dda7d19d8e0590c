"""Optimizer work of a trainable-set switch, taken back from "every k steps".

An encoder unfrozen by `requires_grad_(True)` and `add_param_group(...)` under `if step ==
UNFREEZE_AT:`: besides the new parameters' updates (named by `trainable`), optimizer code computes
another way on that step (the new group's settings). With no user line of its own, `periodic_site`
cites that region at the `if` around the step and words it as work switched every k steps. When
every user line it cites is one the switch cites too, and all its ops come from optimizer code, it
is the switch's work: folded into that cause, whose hint applies (expected once per switch).
"""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.frames import is_optimizer_code, is_user_location
from xlagraph.diagnose.recognizers._causes import fold_into
from xlagraph.diagnose.recognizers.trainable import HINT, PHASE_HINT

__all__ = ["RECOGNIZER"]

_SWITCHES = frozenset({HINT, PHASE_HINT})


def _recognize(evidence: Evidence, everything: tuple[Cause, ...]) -> Recognized:
    owner = next((i for i, c in enumerate(everything) if not c.info and c.hint in _SWITCHES), None)
    if owner is None:
        return NOTHING
    switch = everything[owner]
    folded = [
        i
        for i, c in enumerate(everything)
        if i != owner
        and not c.info
        and c.kind in (CauseKind.CONDITIONAL_WORK, CauseKind.STRUCTURE)
        and c.library
        and all(is_optimizer_code(x) for x in c.library)
        and (user := {x for x in c.sources if is_user_location(x)})
        and user <= set(switch.sources)
    ]
    if not folded:
        return NOTHING
    # One path with every other fold: `merge` joins the sides' instructions as sets, so one the
    # switch and its optimizer work both name counts once (a concatenation counted it twice).
    return fold_into(
        everything, owner, folded, "optimizer code computes another way on that step too (the same switch)"
    )


RECOGNIZER = Recognizer("trainable_fold", _recognize)
