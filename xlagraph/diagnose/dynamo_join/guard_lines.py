"""The failed guard's lines cited at the causes of the graphs its retrace compiled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import CauseKind
from xlagraph.diagnose.dynamo_join.retrace import GuardFailure, Retrace
from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._source import enclosing_function
from xlagraph.diagnose.recognizers.input_shape import rows_kept
from xlagraph.diagnose.recompile import Recompile

__all__ = ["cite_guards"]


def cite_guards(recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]) -> tuple[Recompile, ...]:
    """Cite the failed guard's lines at the causes of the graphs its retrace compiled.

    torch.compile's bridge runs the traced graph from library frames, so the instructions of such a
    graph name no user line; in the user's terms the graph differs because dynamo retraced the frame:
    where the guarded value is set and where the frame reads it. Causes with user lines of their own
    keep them."""
    out = []
    for r in recompiles:
        retrace = retraces.get(r.dynamo)
        guard = retrace.guard if retrace and not retrace.expected else None
        cite = tuple(dict.fromkeys(x for x in (guard.origin, guard.at) if x)) if guard else ()
        bare = [a for a in r.attribution if not a.lines and not r.causes[a.cause].info] if cite else []
        if not bare:
            out.append(_origin_first(r, guard) if guard else r)
            continue
        attribution = tuple(replace(a, lines=cite) if a in bare else a for a in r.attribution)
        # where the guarded tensor was made says which batch change it is (rows kept by a mask)
        cited = {a.cause for a in bare}
        causes = tuple(rows_kept(c, cite) if i in cited else c for i, c in enumerate(r.causes))
        out.append(
            replace(r, causes=causes, attribution=attribution, lines=tuple(dict.fromkeys(cite + r.lines)))
        )
    return tuple(out)


# A guard on a tensor's size explains a change of a graph input's shape.
_SIZED = {
    "tensor_size": frozenset({CauseKind.PARAMETER_SHAPE, CauseKind.DYNAMIC_SHAPE}),
    "tensor_rank": frozenset({CauseKind.PARAMETER_SHAPE, CauseKind.DYNAMIC_SHAPE}),
}


def _origin_first(r: Recompile, guard: GuardFailure) -> Recompile:
    """A graph of the retrace whose shape cause cites lines of its own (the loss that reads the
    batch, a transfer): the size changed where the guarded value was made (`ids, target =
    self.batch_at(i, length)`), the line a user must change; the lines that use it come second."""
    kinds = _SIZED.get(guard.kind, frozenset())
    if not guard.origin or not kinds:
        return r
    changed = [
        a
        for a in r.attribution
        if a.lines
        and guard.origin not in a.lines
        and all(_same_function(x, guard.origin) for x in a.lines)
        and r.causes[a.cause].kind in kinds
        and not r.causes[a.cause].info
    ]
    if not changed:
        return r
    attribution = tuple(
        replace(a, lines=(guard.origin, *a.lines)) if a in changed else a for a in r.attribution
    )
    return replace(r, attribution=attribution, lines=tuple(dict.fromkeys((guard.origin, *r.lines))))


def _same_function(line: str, origin: str) -> bool:
    """`line` is a use beside the origin (the loss in the same loop), not the statement inside a
    helper the origin calls that decides the size itself (`longest = max(...)` in `tokenize`)."""
    (file, n), (ofile, on) = split_location(line), split_location(origin)
    return file == ofile and enclosing_function(file, n) == enclosing_function(ofile, on)
