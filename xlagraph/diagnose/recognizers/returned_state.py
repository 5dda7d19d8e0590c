"""`state_init` for state the script keeps itself: a buffer made on the first step (momentum kept
in a dict, `buf = p.grad.clone()` under `if buf is None:`) is a fresh value the first graph
returns; from the next step on it is an input that the step reads and returns updated
(`buf.mul_(m).add_(g)`). The graph changes once: expected, like optimizer buffers.

Evidence, per shape: B returns updates of new inputs of that shape, and A returned that many
more fresh values of it (outputs that update no input) than B does. What computes with those
inputs in B is the state's own update.
"""

from __future__ import annotations

from collections import Counter

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import added_at_warm_up, added_part, merge
from xlagraph.diagnose.recognizers._dataflow import downstream, updated_inputs
from xlagraph.diagnose.shapes import shape_of
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]


def _fresh(comp: CanonicalComputation) -> Counter[str]:
    """Outputs that update no input, by shape (values the step made, not state it carried)."""
    updating = updated_inputs(comp, comp.outputs)
    return Counter(shape_of(comp, o) for o in dict.fromkeys(comp.outputs) if o not in updating)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    added = added_at_warm_up(evidence, pending)
    if not added:
        return NOTHING
    left, right = evidence.left.entry, evidence.right.entry
    new = {p for i in added for p in pending[i].right if p in right.param_number}
    carried = {p for p in updated_inputs(right, right.outputs).values() if p in new}
    carried = {p for p in carried if not shape_of(right, p).endswith("[]")}
    if not carried:
        return NOTHING
    wanted = Counter(shape_of(right, p) for p in carried)
    made, kept = _fresh(left), _fresh(right)
    if any(made[s] - kept[s] < n for s, n in wanted.items()):
        return NOTHING
    fed = downstream(users_of(right), carried)
    regions = [i for i, c in enumerate(pending) if c.kind is CauseKind.STRUCTURE and set(c.right) & fed]
    parts = [added_part(pending[i], carried.__contains__) for i in added]
    rest = tuple(c for i in added if (c := added_part(pending[i], lambda p: p not in carried)) is not None)
    shapes = sorted(wanted)
    summary = (
        f"state created on the first steps: B reads back {len(carried)} tensor(s) "
        f"({', '.join(shapes[:4])}) that the first graph made and returned, and returns them "
        "updated: buffers the script keeps itself (momentum made on the first step), which exist "
        "from this step on; expected once"
    )
    cause = merge(
        CauseKind.STATE_INIT, summary, [c for c in parts if c] + [pending[i] for i in regions], info=True
    )
    return Recognized((cause,), frozenset(added + regions), rest)


RECOGNIZER = Recognizer("returned_state", _recognize)
