"""The XLA graphs of another mode's first compile (no_grad, eval()): that mode's code, not a cause."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import Retrace, with_one_cause
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.recompile import Recompile

__all__ = ["mode_graphs"]


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
