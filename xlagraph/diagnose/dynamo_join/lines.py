"""The user's lines a retrace's graphs cite: the failed guard's, and a backward's from its forward."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import HINTS, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import GuardFailure, Retrace
from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._source import enclosing_function
from xlagraph.diagnose.recognizers.input_shape import rows_kept
from xlagraph.diagnose.recompile import Recompile
from xlagraph.ir import Frame

__all__ = ["cite_backward", "cite_guards"]


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
        said = _GUARD_CITED.get(guard.kind) if guard else None
        if retrace and guard and said and said[1] in guard.origin_source:
            out.append(_guard_first(r, guard, retrace.call_site))
            continue
        if retrace and guard and guard.kind == "python_scalar":
            r = _scalar_named(r, guard, retrace)
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


# A guard whose kind names the change the XLA graphs show -> that change's kinds, and what its
# origin's line must say to be where the user made that change: an input's dtype its element type
# (any origin); an input's requires_grad its gradient, returned or no longer, where the loop
# switched it on the tensor it passes (`x.requires_grad_()`; a tensor computed from weights just
# unfrozen is the unfreeze's, `trainable`).
_GUARD_CITED = {
    "tensor_dtype": (frozenset({CauseKind.DTYPE}), ""),
    "tensor_requires_grad": (frozenset({CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED}), "requires_grad"),
}


def _guard_first(r: Recompile, guard: GuardFailure, call_site: str) -> Recompile:
    """The graphs of a retrace for an input's new dtype: their element-type change is cited where
    the user cast the input (the guard's origin) and at the compiled call, before the lines the
    graphs name (a `.float()` inside the compiled function reads it, it is not the change), and its
    fix is the guard's (`guards.KINDS`: cast the input to one dtype before the call), not the
    generic one of an element type (autocast, model.half()); a recognizer's more specific fix stays."""
    kinds = _GUARD_CITED[guard.kind][0]
    cite = tuple(dict.fromkeys(x for x in (guard.origin, guard.at, call_site) if x))
    hit = [a for a in r.attribution if r.causes[a.cause].kind in kinds and not r.causes[a.cause].info]
    if not hit or not cite:
        return r
    # the generic text only: a recognizer's own (`dtype.integer`: int32 and int64 batches) says more
    fixed = {a.cause for a in hit if r.causes[a.cause].hint == HINTS[r.causes[a.cause].kind]}
    causes = tuple(
        replace(c, hint=guard.fix) if i in fixed and guard.fix else c for i, c in enumerate(r.causes)
    )
    attribution = tuple(
        replace(a, lines=tuple(dict.fromkeys(cite + a.lines))) if a in hit else a for a in r.attribution
    )
    return replace(r, causes=causes, attribution=attribution, lines=tuple(dict.fromkeys(cite + r.lines)))


def _scalar_named(r: Recompile, guard: GuardFailure, retrace: Retrace) -> Recompile:
    """A constant (0 or ±1) baked into a graph of a retrace for a Python number argument (`temp ==
    2.0` failed, the graph bakes 1): that argument is the scalar, said by its name, the value the
    compiled code assumed, and where the caller computed it (`return SCHEDULE[...]` in the
    function its call passes): the line a user changes, cited first (issue 37); the lines the
    diff found (the multiply that reads it) after it."""
    hit = {
        a.cause
        for a in r.attribution
        if r.causes[a.cause].kind is CauseKind.CONSTANT_VALUE and not r.causes[a.cause].info
    }
    if not hit:
        return r
    made = f", computed at {guard.origin} (`{guard.origin_source[:60]}`)" if guard.origin else ""
    said = f"{guard.phrase} in `{retrace.function}`{made}, passed at {retrace.call_site}: this graph bakes it"
    causes = tuple(
        replace(c, summary=f"{said}: {c.summary}") if i in hit else c for i, c in enumerate(r.causes)
    )
    first = (guard.origin,) if guard.origin else ()
    attribution = tuple(
        replace(
            a,
            summary=causes[a.cause].summary,
            lines=tuple(dict.fromkeys((*first, *a.lines))) if a.lines else (),
        )
        if a.cause in hit
        else a
        for a in r.attribution
    )
    lines = tuple(dict.fromkeys((*first, *r.lines))) if any(a.lines for a in attribution) else r.lines
    return replace(r, causes=causes, attribution=attribution, lines=lines)


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
