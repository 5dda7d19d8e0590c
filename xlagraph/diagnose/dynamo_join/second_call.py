"""The second call of a retraced trace: the bridge's warm-up split again, tied to the retrace.

torch_xla's openxla bridge runs a full `torch_xla.sync()` on the first call of a (re)traced frame
(the pending work lands in that step's graphs) and syncs only the compiled graph's inputs from the
second call on (a graph at dynamo_bridge.py:524, and the user's next sync holds the work left
pending). The first trace's second call is the run's step 1 (`bridge_step`, `recognizers/
bridge_sync`). A retrace's second call is wherever that trace next runs: the next step, or later
when the argument that retraced alternates (a probe on even steps: step 6 retraces, step 7 runs the
first trace, step 8 is the new trace's second call). The graphs that step compiles are to the new
trace what the first trace's second-call graphs are to it: read against those, what differs is the
retrace's own work (the new output, its weights' update), compiled once and replayed whenever that
trace runs. Told by the steps, not by the step after the retrace: a graph compiled by no dynamo
compile, first run on a retrace's second call after another trace of the frame ran between, against
a graph first run on the second call of another trace of the same frame.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import Retrace, with_one_cause
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.recompile import Recompile

__all__ = ["SECOND_CALL", "second_calls"]

# The `Cause.case` of this warm-up reading: a graph's first compile, not what it differs by when it
# takes turns with the other trace's graph in the steady state (`report/turns.py` diffs those).
SECOND_CALL = "second_call.warm_up"


def _second_call_graphs(
    made: Mapping[str, str], steps: Mapping[int, tuple[str, ...]]
) -> dict[str, tuple[int, int, frozenset[str]]]:
    """Compile id -> (its first step, its second call's step, the graphs first run on that step
    that no dynamo compile made): the second call is the first later step that runs a graph of the
    compile again."""
    first_run: dict[str, int] = {}
    for k in sorted(steps):
        for v in steps[k]:
            first_run.setdefault(v, k)
    out = {}
    for cid in set(made.values()):
        own = {v for v, c in made.items() if c == cid and v in first_run}
        if not own:
            continue
        start = min(first_run[v] for v in own)
        again = next((k for k in sorted(steps) if k > start and own & set(steps[k])), None)
        if again is None:
            continue
        new = frozenset(v for v in steps[again] if first_run[v] == again and v not in made)
        out[cid] = (start, again, new)
    return out


def _other_trace_between(
    cid: str, start: int, again: int, made: Mapping[str, str], steps: Mapping[int, tuple[str, ...]]
) -> bool:
    """Another trace of `cid`'s frame ran between its first and second call: the traces take turns
    (a flag on alternate steps). Where the second call is the next step (a change for good, a list
    that grew) the rules of that step tell its graphs (`bridge_step`, `steady_after_switch`,
    `follow_forward`, `recognizers/bridge_sync`), the change itself where it still shows."""
    frame = cid.split("/")[0]
    return any(
        (c := made.get(v)) is not None and c != cid and c.split("/")[0] == frame
        for k in steps
        if start < k < again
        for v in steps[k]
    )


def second_calls(
    recompiles: Sequence[Recompile],
    retraces: Mapping[str, Retrace],
    made: Mapping[str, str],
    steps: Mapping[int, tuple[str, ...]],
    bridged: frozenset[int],
) -> tuple[Recompile, ...]:
    """`recompiles` with each graph of a retrace's second call (module doc) told as that retrace's
    warm-up and tied to it (`Recompile.dynamo`). `made`: variant -> the compile id that made it;
    `steps`: each step's variants in run order; `bridged`: the steps the bridge ran a full sync on."""
    calls = _second_call_graphs(made, steps)
    out = []
    for r in recompiles:
        live = [c for c in r.causes if not c.info]
        base = r.baseline.variant if r.baseline else ""
        found = [
            (cid, start, again)
            for cid, (start, again, new) in calls.items()
            if cid in retraces
            and r.variant in new
            and start in bridged
            and _other_trace_between(cid, start, again, made, steps)
            and any(
                other != cid and other.split("/")[0] == cid.split("/")[0] and base in calls[other][2]
                for other in calls
            )
        ]
        if r.dynamo or not live or len(found) != 1:
            out.append(r)
            continue
        cid, start, again = found[0]
        retrace = retraces[cid]
        cause = Cause(
            CauseKind.STATE_INIT,
            f"torch.compile's warm-up of the trace it compiled again at step {start}: the openxla "
            f"bridge synced all pending work on that trace's first call, and step {again} is "
            "its second call, where the bridge first syncs only the compiled graph's inputs; this "
            f"graph is to the new trace what graph {base} is to the trace before it, and what differs "
            "is the retrace's own work (its new outputs, the updates of the weights it trains), "
            "compiled once and replayed whenever that trace runs",
            fix_text("state_init.bridge_sync"),
            info=True,
            case=SECOND_CALL,
        )
        lines = tuple(dict.fromkeys(x for x in (retrace.guard.at, retrace.call_site) if x))
        told = with_one_cause(r, (cause, *(c for c in r.causes if c.info)), lines, r.lines)
        out.append(replace(told, dynamo=cid))
    return tuple(out)
