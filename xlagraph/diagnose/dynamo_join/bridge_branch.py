"""A graph the bridge compiled from no user frame for its code after a graph break, on a step
whose graphs change under a host read: that branch's work."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.recompile import Attribution, Recompile

__all__ = ["join_branch_graphs"]


def join_branch_graphs(recompiles: Sequence[Recompile]) -> tuple[Recompile, ...]:
    """A graph torch.compile's bridge first compiles mid-run from no user frame (its code after a
    graph break, traced again for the other side of a host read: `if loss.item() > limit:`) on a
    step whose own graphs change under that read is the same branch's work, not a program that
    runs at a point of its own: it takes the cause named at the `if` (issue 37)."""
    # The first host branch named on each step after the first, looked up once for all graphs.
    branches: dict[int, Cause] = {}
    for o in recompiles:
        for c in o.causes:
            if o.step > 0 and c.fix_id == "conditional_work.host_branch" and not c.info:
                branches.setdefault(o.step, c)
    out = []
    for r in recompiles:
        own = len(r.causes) == 1 and r.causes[0].fix_id == "own_graph"
        branch = branches.get(r.step)
        if r.frames or r.trigger != "dynamo" or not own or branch is None:
            out.append(r)
            continue
        cause = replace(
            branch,
            summary=(
                f"torch.compile's bridge compiled this graph for its code after the graph break when "
                f"the branch flipped: {branch.summary}"
            ),
        )
        attribution = (Attribution(0, str(cause.kind), cause.summary, lines=cause.sources),)
        out.append(replace(r, causes=(cause,), attribution=attribution, lines=cause.sources))
    return tuple(out)
