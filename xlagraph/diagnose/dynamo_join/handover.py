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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.optimizer import forward_change
from xlagraph.diagnose.dynamo_join.retrace import Retrace, with_one_cause
from xlagraph.diagnose.frames import is_optimizer_code
from xlagraph.diagnose.recompile import Attribution, Recompile

__all__ = ["moved_work"]

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
_BRIDGE = "torch_xla/_dynamo/"


def _handed_over(c: Cause, a: Attribution, forward: Cause) -> bool:
    """`c` changes only what the graph takes and returns, is already said as the forward's change
    (`follow_forward`), or is other work in optimizer code fed by the bridge (the update read as
    work done on some steps, the state made for a parameter)."""
    if c.kind in _INTERFACE or (c.kind is forward.kind and c.hint == forward.hint):
        return True
    return (
        c.kind in (CauseKind.CONDITIONAL_WORK, CauseKind.STRUCTURE)
        and any(is_optimizer_code(x) for x in a.library_lines)
        and all(is_optimizer_code(x) or x.startswith(_BRIDGE) for x in a.library_lines)
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
