"""The step after torch.compile's bridge warm-up: its graphs are the steady split of the work.

On a step where the openxla bridge first compiles a graph (a backward compiled at the first
backward call) it runs a full `torch_xla.sync()` before extracting it: everything pending (the
forward of every branch, the loss) runs in that sync's graph, and the step's other graphs, the
bridge's own and the user's, are cut around it. On the next step the bridge syncs only the
compiled graph's inputs, so the same work lands in other graphs (the loss's backward in the
bridge's first input sync, a second backward call's graph of its own). Read against the warm-up
step's graphs that is inputs added, work done only on some steps, other structure: none of it a
change of the user's code. Told apart by the steps themselves: the step right after the run's
first bridged step compiles graphs that run in the same order on the step after it (the steady
split, replayed), so a recompile there of the bridge's own sync (its call site is the bridge's,
not a user's line) is the warm-up's (`state_init.bridge_sync`, info). The user's own sync graph
of that step is `recognizers/bridge_sync.py`'s to tell (work the step stopped feeding is a
change there), and a bridged step later in the run (a retrace for new shapes) is no warm-up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import BRIDGE_CODE, with_one_cause
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.recompile import Recompile

__all__ = ["after_bridge_step"]


def _settled_steps(steps: Mapping[int, tuple[str, ...]], bridged: frozenset[int]) -> dict[int, int]:
    """Step -> the bridged step before it, for each step right after a bridged one that is not
    bridged itself and whose graphs (variants, in order) the next step runs again unchanged."""
    out = {}
    for b in sorted(bridged)[:1]:
        k = b + 1
        if k in bridged or k not in steps or k + 1 not in steps:
            continue
        if steps[k] == steps[k + 1] and steps[k] != steps[b]:
            out[k] = b
    return out


def after_bridge_step(
    recompiles: Sequence[Recompile], steps: Mapping[int, tuple[str, ...]], bridged: frozenset[int]
) -> tuple[Recompile, ...]:
    """`recompiles` with those of a settled step (`_settled_steps`) against a graph of the bridged
    step before it or of their own step told as torch.compile's warm-up. `steps`: each step's
    variants in run order; `bridged`: the steps on which the bridge ran a full sync."""
    settled = _settled_steps(steps, bridged)
    out = []
    for r in recompiles:
        b = settled.get(r.step)
        live = [c for c in r.causes if not c.info]
        base_step = _step_of(r, steps)
        ours = r.trigger == "dynamo" and r.call_site.startswith(BRIDGE_CODE)
        if b is None or not ours or not live or base_step not in (b, r.step):
            out.append(r)
            continue
        cause = Cause(
            CauseKind.STATE_INIT,
            f"torch.compile's warm-up: the openxla bridge synced all pending work at step {b} (its first "
            "compile of a graph runs a full torch_xla.sync before extracting it), so that step's graphs "
            f"split the work otherwise; from step {r.step} on it syncs only the compiled graph's inputs "
            "and this graph is part of the steady split, replayed on every later step",
            fix_text("state_init.bridge_sync"),
            info=True,
        )
        out.append(with_one_cause(r, (cause, *(c for c in r.causes if c.info)), (), r.lines))
    return tuple(out)


def _step_of(r: Recompile, steps: Mapping[int, tuple[str, ...]]) -> int | None:
    """The first step whose graphs include `r`'s baseline."""
    if r.baseline is None:
        return None
    return next((k for k in sorted(steps) if r.baseline.variant in steps[k]), None)
