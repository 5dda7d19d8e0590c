"""A graph cut on torch.compile's warm-up steps only, by an implicit sync from no frame: warm-up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import with_one_cause
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.recompile import Recompile

__all__ = ["warm_up_cuts"]


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
