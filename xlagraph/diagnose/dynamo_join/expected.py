"""The graphs of a retrace that are expected: another mode's first compile, a warm-up cut."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import Retrace, with_one_cause
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.recompile import Recompile

__all__ = ["mode_graphs", "warm_up_cuts"]


def mode_graphs(recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]) -> tuple[Recompile, ...]:
    """The XLA graphs of an expected torch.compile recompile (the first compile of another mode: a
    scoring pass under no_grad, eval()) are that mode's code, compiled once and reused: what differs
    from the other mode's graph (no backward, no updates, other sizes) is what the mode computes,
    not a cause to fix. Said once, as dynamo's half says it."""
    out = []
    for r in recompiles:
        retrace = retraces.get(r.dynamo)
        if retrace is None or not retrace.expected or not r.causes or r.expected:
            out.append(r)
            continue
        lines = tuple(dict.fromkeys(x for x in (retrace.call_site, r.call_site) if x))
        cause = Cause(
            CauseKind.CONDITIONAL_WORK,
            f"the graph of another mode of `{retrace.function}`: torch.compile traced it again "
            f"({retrace.guard.phrase}), and this is what that mode computes; each mode is compiled once "
            "and reused",
            fix_text("own_graph"),
            info=True,
            sources=lines,
        )
        out.append(with_one_cause(r, (cause,), lines, lines))
    return tuple(out)


def warm_up_cuts(recompiles: Sequence[Recompile], phases: Mapping[str, set[str]]) -> tuple[Recompile, ...]:
    """A graph cut by an implicit sync from no frame at all (neither the user's nor a library's),
    run only on torch.compile's warm-up steps and never in the steady state: the bridge flushing
    work pending around its first runs, compiled once and never replayed. Only a cut is named
    there (`graph_break`): no step of the steady state pays for it, so it is warm-up, expected.
    `phases`: the phases (warm-up, steady) each variant ran in."""
    out = []
    for r in recompiles:
        live = [c for c in r.causes if not c.info]
        if (
            r.frames
            or r.library_frames
            or r.trigger != "implicit"
            or phases.get(r.variant) != {"warm-up"}
            or "steady" not in {p for v in phases.values() for p in v}
            or not live
            or any(c.kind is not CauseKind.GRAPH_BREAK for c in live)
        ):
            out.append(r)
            continue
        cause = Cause(
            CauseKind.STATE_INIT,
            "torch.compile's warm-up: an implicit sync from no frame of the run cut a graph on its warm-up "
            "steps only (the openxla bridge flushing work pending around its first runs); no step of the "
            "steady state is cut there, so it compiled once and is not replayed",
            fix_text("state_init.bridge_sync"),
            info=True,
        )
        out.append(with_one_cause(r, (cause,), (), r.lines))
    return tuple(out)
