"""A graph synced from autograd's backward, with no user line, cites the lines of the same change
in the same step's forward."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import CauseKind
from xlagraph.diagnose.recompile import Recompile
from xlagraph.ir import Frame

__all__ = ["cite_backward"]

# What a value entering the step changes alike in its forward's graph and its backward's: a baked
# scalar, a size, an element type (an output added or dropped is each graph's own).
_CARRIED = frozenset({str(CauseKind.CONSTANT_VALUE), str(CauseKind.PARAMETER_SHAPE), str(CauseKind.DTYPE)})


def _autograd(f: Frame) -> bool:
    return f.file.startswith("torch/autograd/") or "/_aot_autograd/" in f.file


def cite_backward(recompiles: Sequence[Recompile]) -> tuple[Recompile, ...]:
    """Cite the user's lines at a change of a graph synced with no user frame at all.

    torch.compile's bridge syncs the pending work a compiled backward needs from inside autograd's
    engine: the loss's backward, lazy ops that autograd records without a source line, run from no
    user frame. A Python scalar baked into them (eps -> 0.0) is baked into the forward's graph of
    the same step too, whose instructions carry the user's lines: the same change, so the same
    lines. Only for a change a value entering the step makes alike in both (`_CARRIED`), with no
    line of its own, and a same-step graph with that cause kind that cites lines."""
    out = []
    for r in recompiles:
        bare = [a for a in r.attribution if not a.lines and not r.causes[a.cause].info and a.kind in _CARRIED]
        if r.frames or not bare or not any(_autograd(f) for f in r.library_frames):
            out.append(r)
            continue
        lines: dict[str, tuple[str, ...]] = {}
        graphs: dict[str, tuple[str, ...]] = {}
        for other in recompiles:
            if other is r or other.step != r.step:
                continue
            for a in other.attribution:
                if a.lines and not other.causes[a.cause].info and a.kind in _CARRIED:
                    lines[a.kind] = tuple(dict.fromkeys(lines.get(a.kind, ()) + a.lines))
                    graphs[a.kind] = tuple(dict.fromkeys((*graphs.get(a.kind, ()), other.variant)))
        cited = {id(a): a.kind for a in bare if a.kind in lines}
        if not cited:
            out.append(r)
            continue
        attribution = tuple(
            replace(a, lines=lines[cited[id(a)]]) if id(a) in cited else a for a in r.attribution
        )
        found = tuple(x for a in attribution for x in a.lines)
        kinds = dict.fromkeys(cited.values())
        said = "; ".join(f"{k} at the lines of graph {', '.join(graphs[k])}" for k in kinds)
        note = (
            f"synced from no user frame (autograd's backward, which records no source line): {said}, "
            f"the same change in the same step"
        )
        out.append(
            replace(
                r,
                attribution=attribution,
                lines=tuple(dict.fromkeys(found + r.lines)),
                note=f"{r.note}; {note}" if r.note else note,
            )
        )
    return tuple(out)
