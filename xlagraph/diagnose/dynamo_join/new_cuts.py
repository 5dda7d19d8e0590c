"""A graph a retrace's step cuts anew where the user has no sync: the retrace's change again.

A retrace that adds work (the backward of parameters it now trains, a branch it now takes) can
make that work reach an op torch_xla runs on the CPU (EmbeddingBag's backward) or another sync
torch_xla makes from C++: the work before it is cut into a graph no earlier step ran, synced from
no frame of the user's. Compared with the nearest earlier graph (none shares its call site), it
reads as a graph break and inputs of other shapes; it is the retrace's change seen where torch_xla
cut it, so the retrace's kind, fix and lines, said once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xlagraph.diagnose.causes import HINTS, Cause
from xlagraph.diagnose.dynamo_join.retrace import Retrace, with_one_cause
from xlagraph.diagnose.new_code import NEW_CALL_SITE
from xlagraph.diagnose.recompile import Attribution, Recompile

__all__ = ["named_change", "retrace_cuts"]


def named_change(cid: str, recompiles: Sequence[Recompile]) -> tuple[Cause, Attribution] | None:
    """The retrace's change: the first cause of its graphs that names a pattern (its own fix, not
    its kind's generic one) and cites the user's lines."""
    for r in recompiles:
        if r.dynamo != cid:
            continue
        for a in r.attribution:
            c = r.causes[a.cause]
            if a.lines and not c.info and c.hint != HINTS[c.kind]:
                return c, a
    return None


def _cut_anew(r: Recompile) -> bool:
    """`r` is synced from no frame of the user's by a sync torch_xla made (implicit), and no
    earlier graph shares its call site: work cut where no earlier step was cut."""
    return (
        not r.frames
        and r.trigger == "implicit"
        and r.baseline is not None
        and r.baseline.reason.startswith(NEW_CALL_SITE)
    )


def retrace_cuts(recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]) -> tuple[Recompile, ...]:
    """A graph of a retrace's step cut anew from no frame of the user's (`_cut_anew`), told by the
    retrace's change: its kind, fix and lines."""
    out = []
    for r in recompiles:
        retrace = retraces.get(r.dynamo)
        named = (
            named_change(r.dynamo, recompiles) if retrace and not retrace.expected and _cut_anew(r) else None
        )
        if retrace is None or named is None or any(c is named[0] for c in r.causes):
            out.append(r)
            continue
        cause, where = named
        summary = (
            f"a graph no earlier step ran, cut from no line of yours: torch.compile traced "
            f"`{retrace.function}` again on this step ({retrace.guard.phrase}), and the work that change "
            "adds reaches a sync torch_xla makes itself (an op it runs on the CPU, whose inputs it "
            "computes first: PT_XLA_DEBUG_LEVEL=1 names it), which cuts that work here; the retrace's "
            f"change ({cause.kind} at {where.lines[0]}): {cause.summary}"
        )
        one = Cause(cause.kind, summary, cause.hint, sources=where.lines)
        causes = (one, *(c for c in r.causes if c.info))
        out.append(with_one_cause(r, causes, where.lines, tuple(dict.fromkeys(where.lines + r.lines))))
    return tuple(out)
