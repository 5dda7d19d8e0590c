"""The user's graph on the step after a mode switched for good: the switch's, said again.

A retrace for a mode switched once for good (`expected.mode_switched`: dropout off, the grad mode
off for a branch) makes the openxla bridge compile the new mode's graphs on its step, and that
first compile runs a full sync: the step's own sync graph is cut around it (named there as the
switch, `expected._mode_switch`). On the next step the bridge syncs only the compiled graphs'
inputs, so the user's graph differs once more from the old mode's, now in its steady form (a
lazy backward without the branch that lost its grad: inputs removed). That is the same switch,
not another change: said with its kind, lines and fix. Told by the graph: at the same call site,
against a graph of the old mode (one that ran before the switch), on the step right after the
switch's bridged step.
"""

from __future__ import annotations

from collections.abc import Sequence

from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.dynamo_join.expected import GRAD_SWITCH_FIX, SWITCH_FIX
from xlagraph.diagnose.dynamo_join.retrace import with_one_cause
from xlagraph.diagnose.fixes import fix_id
from xlagraph.diagnose.recompile import Recompile

__all__ = ["steady_after_switch"]

# The fixes `expected.switch_fix` gives a mode switched for good.
_SWITCHES = frozenset({GRAD_SWITCH_FIX, SWITCH_FIX, "conditional_work.training_branch"})


def _switch(r: Recompile, recompiles: Sequence[Recompile], bridged: frozenset[int]) -> Recompile | None:
    """The recompile of the switch whose step's steady form `r` is, or None."""
    if r.baseline is None or r.step - 1 not in bridged or r.step in bridged:
        return None
    return next(
        (
            x
            for x in recompiles
            if x.step == r.step - 1
            and x.call_site == r.call_site
            and r.baseline.sync < x.sync
            and x.causes
            and not x.causes[0].info
            and fix_id(x.causes[0].hint) in _SWITCHES
        ),
        None,
    )


def steady_after_switch(recompiles: Sequence[Recompile], bridged: frozenset[int]) -> tuple[Recompile, ...]:
    """`recompiles` with the user's graph on the step after a mode switch's bridged step said as
    that switch. `bridged`: the steps on which the bridge ran a full sync."""
    out = []
    for r in recompiles:
        x = _switch(r, recompiles, bridged) if any(not c.info for c in r.causes) else None
        if x is None:
            out.append(r)
            continue
        said = x.causes[0]
        cause = Cause(
            said.kind,
            f"the steady graph of the mode switch at step {x.step} (graph {x.variant}; on that step "
            "the openxla bridge's first compile of the new mode ran a full sync, which cut its graph "
            f"otherwise): {said.summary}",
            said.hint,
            sources=said.sources,
        )
        lines = tuple(dict.fromkeys(said.sources))
        out.append(with_one_cause(r, (cause, *(c for c in r.causes if c.info)), lines, (*lines, *r.lines)))
    return tuple(out)
