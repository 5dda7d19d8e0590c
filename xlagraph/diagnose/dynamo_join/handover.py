"""The lazy graph of a retrace's step when the retrace hit other graph breaks: the work that moved.

Under torch.compile(backend="openxla") the code after a graph break, and the backward of what it
computed, can run lazily in the step's own sync graph beside the optimizer. A retrace that no
longer hits the break (a list that grows until `zip()` pairs items of equal counts) compiles that
work into its own graphs, and the sync graph of that step then only hands over other tensors: it
takes the gradients the bridge's backward returns instead of the activations it took, and no
longer returns what the lazy backward made (or the reverse, for a break the retrace hits anew).
Read against the steps before, that is outputs removed, inputs added and removed, and the
optimizer's update read as work on some steps: the retrace's change seen from the lazy side, so
the forward's kind, lines and fix, said once.

So is the step's own sync graph on the retrace's step when no break moved: the bridge's first
compile of the retrace's graphs runs a full sync, which runs the work pending before the call (the
loss) in the bridge's graph, so the user's graph returns it no more on that step, and reads the
gradients the new backward made in another order (`bridge_sync` names the loss it lost).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.new_cuts import named_change
from xlagraph.diagnose.dynamo_join.optimizer import forward_change
from xlagraph.diagnose.dynamo_join.retrace import BRIDGE_CODE, Retrace, with_one_cause
from xlagraph.diagnose.frames import is_optimizer_code
from xlagraph.diagnose.recognizers.bridge_sync import MID_RUN
from xlagraph.diagnose.recompile import Attribution, Recompile

__all__ = ["bridge_flush", "moved_work"]

# What a graph hands over: the tensors it takes and returns.
_INTERFACE = frozenset(
    {
        CauseKind.OUTPUT_ADDED,
        CauseKind.OUTPUT_REMOVED,
        CauseKind.PARAMETER_ADDED,
        CauseKind.PARAMETER_REMOVED,
        CauseKind.PARAMETER_SHAPE,
    }
)


def _handed_over(c: Cause, a: Attribution, forward: Cause) -> bool:
    """`c` changes only what the graph takes and returns, is already said as the forward's change
    (`follow_forward`), or is other work in optimizer code fed by the bridge (the update read as
    work done on some steps, the state made for a parameter)."""
    if c.kind in _INTERFACE or (c.kind is forward.kind and c.hint == forward.hint):
        return True
    return (
        c.kind in (CauseKind.CONDITIONAL_WORK, CauseKind.STRUCTURE)
        and any(is_optimizer_code(x) for x in a.library_lines)
        and all(is_optimizer_code(x) or x.startswith(BRIDGE_CODE) for x in a.library_lines)
    )


def _moved(retrace: Retrace) -> str:
    """The breaks the retrace no longer hits (or hits anew), and where the work after them went."""
    gone = [b for b in retrace.breaks_before if b not in retrace.breaks]
    if gone:
        return (
            f"without its graph break ({'; '.join(gone)}), so the work after the break and its "
            f"backward, run in this lazy graph before, run in the retrace's graphs"
        )
    new = [b for b in retrace.breaks if b not in retrace.breaks_before]
    return (
        f"with a graph break ({'; '.join(new)}), so the work after the break and its backward, "
        f"run in the compiled graphs before, run in this lazy graph"
    )


def moved_work(recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]) -> tuple[Recompile, ...]:
    """A graph of a retrace that hit other graph breaks than the compile it replaced, none of whose
    live causes does more than hand other tensors over, told by the retrace's forward change: its
    kind, fix and lines, with the break that moved the work."""
    out = []
    for r in recompiles:
        retrace = retraces.get(r.dynamo)
        moved = bool(retrace) and not retrace.expected and set(retrace.breaks) != set(retrace.breaks_before)
        forward = forward_change(r.dynamo, recompiles) if moved else None
        live = [a for a in r.attribution if not r.causes[a.cause].info]
        if (
            retrace is None
            or forward is None
            or not live
            or any(r.causes[a.cause] is forward[0] for a in live)
            or not all(_handed_over(r.causes[a.cause], a, forward[0]) for a in live)
        ):
            out.append(r)
            continue
        cause, where = forward
        summary = (
            f"this graph only hands other tensors over: torch.compile traced `{retrace.function}` "
            f"again {_moved(retrace)}; the retrace's change ({cause.kind} at {where.lines[0]}): "
            f"{cause.summary}"
        )
        lines = tuple(dict.fromkeys(where.lines + tuple(x for a in live for x in a.lines)))
        one = Cause(cause.kind, summary, cause.hint, sources=lines)
        causes = (one, *(c for c in r.causes if c.info))
        out.append(with_one_cause(r, causes, lines, tuple(dict.fromkeys(lines + r.lines))))
    return tuple(out)


# Tensors handed over in another order: the new backward's gradients, made in its order.
_REORDERED = (CauseKind.PARAMETER_PERMUTATION, CauseKind.OUTPUT_PERMUTATION)


def _flushed(c: Cause) -> bool:
    """`c` is the work the bridge's mid-run full sync took out of this graph (`bridge_sync`)."""
    return c.case == MID_RUN


def bridge_flush(recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]) -> tuple[Recompile, ...]:
    """The step's own sync graph on a retrace's step that lost its pending work (a loss) to the
    bridge's full sync, and otherwise only hands tensors over (in another order, or as said for
    the forward's change): the retrace's change again, its kind, fix and lines, said so."""
    out = []
    for r in recompiles:
        retrace = retraces.get(r.dynamo)
        flushed = any(_flushed(c) for c in r.causes)
        # (a change of outputs alone, parameters unfrozen, where the forward's has no other cause)
        # (a retrace that hit other breaks is `moved_work`'s: its work moved between graphs too)
        moved = bool(retrace) and set(retrace.breaks) != set(retrace.breaks_before)
        forward = (
            forward_change(r.dynamo, recompiles) or named_change(r.dynamo, recompiles)
            if retrace and not retrace.expected and flushed and not moved
            else None
        )
        live = [a for a in r.attribution if not r.causes[a.cause].info]
        if (
            retrace is None
            or forward is None
            or any(r.causes[a.cause] is forward[0] for a in live)
            or not all(
                r.causes[a.cause].kind in _REORDERED or _handed_over(r.causes[a.cause], a, forward[0])
                for a in live
            )
        ):
            out.append(r)
            continue
        cause, where = forward
        summary = (
            f"this graph only hands its pending work over: torch.compile traced `{retrace.function}` "
            f"again on this step ({retrace.guard.phrase}), and the openxla bridge's first compile of the "
            "new graphs ran a full sync, which ran the work pending before the call (the loss) in its "
            "graph: this sync's graph returns it no more on this step only"
            + (
                ", and reads what the new graphs made in their order"
                if any(r.causes[a.cause].kind in _REORDERED for a in live)
                else ""
            )
            + f"; the retrace's change ({cause.kind} at {where.lines[0]}): {cause.summary}"
        )
        lines = tuple(dict.fromkeys(where.lines + tuple(x for a in live for x in a.lines)))
        one = Cause(cause.kind, summary, cause.hint, sources=lines)
        causes = (one, *(c for c in r.causes if c.info and not _flushed(c)))
        out.append(with_one_cause(r, causes, lines, tuple(dict.fromkeys(lines + r.lines))))
    return tuple(out)
