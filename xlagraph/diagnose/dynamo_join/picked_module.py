"""A module picked by a Python value that torch.compile guards: another module's weights.

`heads[task](x)` inside a compiled function, `task` a Python int passed in: dynamo guards the
value and traces each pick, and each trace's graphs read the picked module's weights (its forward),
their gradients and the activations of its width (its backward), of that module's shapes. Diffed,
that reads as inputs of other shapes, which the shapes alone word as a batch or a sequence that
changed. It is the pick: the inputs of other shapes of the retrace's graphs are another module's
weights, cited where the value is made and where it picks the module, with the fix that keeps one
graph (every module run, the losses masked). The lazy graphs of later steps that name weights of
another module picked by a key (`input_shape`) at that line are cited where the value is made too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import CauseKind
from xlagraph.diagnose.dynamo_join.retrace import GuardFailure, Retrace
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recompile import Recompile

__all__ = ["picked_modules"]

HINT = fix("parameter_shape.switched_weights")
# The guarded name, as the guard's phrase quotes it: "Python argument `task` changed (...)".
_NAME = re.compile(r"`([A-Za-z_]\w*)`")


def _pick(guard: GuardFailure) -> str:
    """The module lookup by the guarded value on the guard's line (`tasks.heads[task]`), or ""."""
    name = _NAME.search(guard.phrase)
    if not name or not guard.at:
        return ""
    found = re.search(rf"[\w.]+\[\s*{re.escape(name.group(1))}\s*\](?=\()", guard.source)
    return found.group(0) if found else ""


def _said(summary: str, lookup: str, guard: GuardFailure) -> str:
    """The shape cause's own words (which inputs changed), then what they are."""
    made = f", made at {guard.origin}" if guard.origin else ""
    return (
        f"{summary.split('; ', 1)[0]}; weights of another module: `{lookup}` picks the module by the "
        f"Python value dynamo guards ({guard.phrase}{made}), and each pick is a graph of its own"
    )


def picked_modules(recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]) -> tuple[Recompile, ...]:
    """The inputs of other shapes in the graphs of a retrace whose guarded value picks a module
    (`_pick`) said as that module's weights, cited where the value is made and where it picks;
    a later graph that says so from its HLO, at the pick's line, cited where the value is made."""
    picks = {
        cid: (rt, lookup) for cid, rt in retraces.items() if not rt.expected and (lookup := _pick(rt.guard))
    }
    if not picks:
        return tuple(recompiles)
    out = []
    for r in recompiles:
        attribution = list(r.attribution)
        causes = list(r.causes)
        for k, a in enumerate(r.attribution):
            c = r.causes[a.cause]
            if c.kind is not CauseKind.PARAMETER_SHAPE or c.info:
                continue
            own = picks.get(r.dynamo)
            later = next((p for p in picks.values() if c.hint == HINT and p[0].guard.at in a.lines), None)
            if own is None and later is None:
                continue
            retrace, lookup = own or later  # type: ignore[misc]
            guard = retrace.guard
            lines = tuple(dict.fromkeys(x for x in (guard.origin, guard.at, *a.lines) if x))
            summary = _said(c.summary, lookup, guard) if own else c.summary
            causes[a.cause] = replace(c, summary=summary, hint=HINT, sources=lines)
            attribution[k] = replace(a, summary=summary, lines=lines)
        if causes != list(r.causes):
            r = replace(
                r,
                causes=tuple(causes),
                attribution=tuple(attribution),
                lines=tuple(dict.fromkeys((*(x for a in attribution for x in a.lines), *r.lines))),
            )
        out.append(r)
    return tuple(out)
