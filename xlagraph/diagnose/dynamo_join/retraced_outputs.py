"""An output a retrace for a changed flag added or removed: the flag's trained parameters'
gradients, the cause of a graph of the same retrace's step, not a tensor kept alive."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import Retrace
from xlagraph.diagnose.recompile import Recompile

__all__ = ["fold_retraced_outputs"]


def fold_retraced_outputs(
    recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]
) -> tuple[Recompile, ...]:
    """An output added or removed in an XLA graph that dynamo's retrace for a changed flag compiled
    (the bridge's forward and backward), where a graph of the same retrace's step names the flag's
    trained parameters (`trainable`: the lazy update lost or gained theirs): the backward returns
    those parameters' gradients or not, the same change. Not a tensor kept alive: that graph's
    cause, fix and lines, said once for both."""
    retraced = {k for k, t in retraces.items() if not t.expected}
    out = []
    for r in recompiles:
        bare = [a for a in r.attribution if a.kind in _OUTPUT_KINDS and _kept_alive(r.causes[a.cause])]
        named = [
            (other, other.causes[a.cause], a)
            for other in recompiles
            if r.dynamo in retraced and other is not r and other.step == r.step and other.dynamo == r.dynamo
            for a in other.attribution
            if other.causes[a.cause].fix_id.startswith("trainable.") and not other.causes[a.cause].info
        ]
        if not bare or not named:
            out.append(r)
            continue
        other, cause, by = named[0]
        causes = list(r.causes)
        attribution = []
        for a in r.attribution:
            if a not in bare:
                attribution.append(a)
                continue
            old = r.causes[a.cause]
            summary = (
                f"the graph torch.compile traced again for the flag: its backward returns the gradients "
                f"of the parameters graph {other.variant} no longer (or now) updates: {old.summary}"
            )
            causes[a.cause] = replace(old, kind=cause.kind, summary=summary, hint=cause.hint)
            attribution.append(replace(a, kind=by.kind, summary=summary, lines=by.lines))
        out.append(
            replace(
                r,
                causes=tuple(causes),
                attribution=tuple(attribution),
                lines=tuple(dict.fromkeys(by.lines + r.lines)),
            )
        )
    return tuple(out)


_OUTPUT_KINDS = frozenset({str(CauseKind.OUTPUT_ADDED), str(CauseKind.OUTPUT_REMOVED)})


def _kept_alive(c: Cause) -> bool:
    return c.fix_id in _OUTPUT_KINDS and not c.info
