"""`state_init` for the state of an update rule the user wrote (a momentum written out in the
training script, not torch.optim's): `v = g.clone() if v is None else beta * v + g`. On the first
step the buffer is made from the gradient; from the next on it is an input, decayed by a scalar
the first step did not read, so the graph changes once: the state's expected warm-up.

Evidence: on a warm-up step, every new input is such a buffer or such a factor. A buffer has the
shape of an input the step already had, is made at a line of the user's, and an output writes it
back through a multiply (a decay, which a gradient carried over, `g + dg`, has not), and it
reaches another input's update but not every gradient (data kept alive does). A factor is a new
scalar whose every output is a write-back among those the buffers reach. The user's regions that
read the buffers are that rule's first read of them. Runs after `pending_init`, which names
buffers made before the loop or returned by the first graph, and `state_init`, which names
torch.optim's.
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import added_at_warm_up, merge
from xlagraph.diagnose.recognizers._dataflow import downstream, updated_inputs
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of
from xlagraph.source_paths import is_library_path

__all__ = ["RECOGNIZER"]

# A buffer feeds its own write-back and its weight's update (and one more, a second moment);
# data kept alive feeds every gradient.
_STATE_OUTPUTS = 3


def _shape(comp: CanonicalComputation, name: str) -> str:
    return strip_layout(comp.instruction(name).shape)


def _own_state(evidence: Evidence, names: list[str]) -> set[str]:
    """The buffers and factors among the new inputs `names` (every one, or none: a set that leaves
    one out is not this rule's)."""
    comp = evidence.right.entry
    module = evidence.right.module
    updates = updated_inputs(comp, comp.outputs)  # output -> the input it writes back
    users, outputs = users_of(comp), set(comp.outputs)
    existing = {_shape(comp, p) for p in comp.param_number if p not in names}

    def reached(name: str) -> set[str]:
        return downstream(users, [name]) & outputs

    def buffer(name: str) -> bool:
        frames = module.frames_of(comp.instruction(name))
        back = {o for o, q in updates.items() if q == name}
        mine = reached(name)
        return (
            not _shape(comp, name).endswith("[]")
            and _shape(comp, name) in existing
            and bool(frames)
            and not is_library_path(frames[0].file)
            and any(updates.get(o) not in (None, name) for o in mine)
            and len(mine) <= _STATE_OUTPUTS
            and any(
                back & (downstream(users, [u]) | {u})
                for u in users.get(name, ())
                if comp.instruction(u).opcode == "multiply"
            )
        )

    buffers = {n for n in names if buffer(n)}
    own = set().union(*(reached(b) for b in buffers)) if buffers else set()
    factors = {
        n
        for n in names
        if n not in buffers
        and _shape(comp, n).endswith("[]")
        and (r := reached(n))
        and r <= own
        and all(o in updates for o in r)
    }
    return buffers | factors if buffers and buffers | factors == set(names) else set()


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    added = added_at_warm_up(evidence, pending)
    if not added:
        return NOTHING
    entry = evidence.right.entry
    names = [p for i in added for p in pending[i].right if p in entry.param_number]
    state = _own_state(evidence, names)
    if not state:
        return NOTHING
    after = downstream(users_of(entry), state)
    regions = [i for i, c in enumerate(pending) if c.kind is CauseKind.STRUCTURE and set(c.right) & after]
    shapes = sorted({_shape(entry, p) for p in state})
    summary = (
        f"state created on the first steps: B takes {len(state)} new input(s) ({', '.join(shapes[:4])}): "
        "buffers of an update rule the script writes itself (a momentum made from the first gradient, "
        "then decayed), which exist from this step on; expected once"
    )
    picked = [*added, *regions]
    cause = merge(CauseKind.STATE_INIT, summary, [pending[i] for i in picked], info=True)
    return Recognized((cause,), frozenset(picked))


RECOGNIZER = Recognizer("own_update", _recognize)
