"""The optimizer's graph of a retrace: updates that follow from the forward's change.

Under torch.compile with the optimizer in a lazy graph of its own, a retrace that changes which
parameters the forward uses (a module attribute that runs one layer more, a branch) changes which
get gradients, so the optimizer's graph updates more (or fewer) of them: outputs added, read
alone as tensors kept alive. They are the forward's change seen in the optimizer; its cause (the
guard's line, its fix) is theirs. So is the state a lazily initialised optimizer (Adam, AdamW)
makes for those parameters at that step: its moments and step counts, made in optimizer code,
read against the first step's graph (state made for every weight) or the steady one as work
library code does on some steps. So are those parameters' weights taken as inputs by the graphs
of that step, paired with other tensors the baseline took (on the first step the bridge's sync
handed a weight over transposed) and read as weights of another shape. So is the same change on
the next step, where the optimizer's graph compiles once more without the bridge's full sync (a
graph no retrace made, of the same call site, with the same change).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import HINTS, Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import BRIDGE_CODE, Retrace
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_optimizer_code
from xlagraph.diagnose.recompile import Attribution, Recompile

__all__ = ["follow_forward", "forward_change"]

_UPDATES = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)
# Other computation in optimizer code: the state made for newly trained parameters (Adam's
# moments from zeros, its step counts and bias corrections), a structure change or work that
# library code does on some steps (`periodic_site`'s name for it).
_STATE = (CauseKind.STRUCTURE, CauseKind.CONDITIONAL_WORK)
# Inputs read as weights the step updates that changed shape within the run (another module's
# picked by a key, or resized): in a retrace's graph, the weights of the parameters the retraced
# forward now trains, paired with other tensors the baseline took (a transposed weight handed over
# by the bridge's sync on the first step), not one tensor that changed shape.
_WEIGHTS = frozenset(fix(f"parameter_shape.{k}") for k in ("switched_weights", "resized_weights"))


def _optimizer_updates(r: Recompile, a: Attribution) -> bool:
    """`a` is outputs added or removed, or other computation, with the generic text, computed in
    optimizer code (from inputs the bridge hands over, where its lines say so)."""
    c = r.causes[a.cause]
    return (
        c.kind in (*_UPDATES, *_STATE)
        and not c.info
        and c.hint == HINTS[c.kind]
        and any(is_optimizer_code(x) for x in a.library_lines)
        and all(is_optimizer_code(x) or x.startswith(BRIDGE_CODE) for x in a.library_lines)
    )


def _new_weights(r: Recompile, a: Attribution) -> bool:
    """`a` is inputs read as weights the step updates that changed shape within the run."""
    c = r.causes[a.cause]
    return c.kind is CauseKind.PARAMETER_SHAPE and not c.info and c.hint in _WEIGHTS


def _folded(c: Cause, a: Attribution, forward: Cause, at: str) -> tuple[Cause, Attribution]:
    """Cause `c` (attributed as `a`) said as the forward's change `forward` (`at`: its kind and
    line): outputs added or removed keep their kind, as the optimizer's updates; the state the
    optimizer makes and the weights taken as inputs are the forward's kind."""
    if c.kind in _UPDATES:
        said = f": the optimizer's updates of the parameters the retraced forward now trains {at}"
        # "2 extra output(s): the live tensor(s) kept alive ..." -> what they are instead
        return replace(c, summary=c.summary + said, hint=forward.hint), replace(
            a, summary=a.summary.split(":", 1)[0] + said
        )
    if c.kind is CauseKind.PARAMETER_SHAPE:
        what = f"the weights of the parameters the retraced forward now trains, taken as inputs {at}"
    else:  # not "library code computes another way on some steps"
        what = f"the optimizer's state made for the parameters the retraced forward now trains {at}"
    return replace(c, kind=forward.kind, summary=what, hint=forward.hint), replace(
        a, kind=str(forward.kind), summary=what
    )


def _change(r: Recompile) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The non-info causes by kind and the shapes they change, positions left out."""

    def shape(text: str) -> str:
        return text.split(": ", 1)[-1]

    return tuple(
        sorted(
            (str(c.kind), tuple(sorted(f"{shape(ch.old)}>{shape(ch.new)}" for ch in c.changes)))
            for c in r.causes
            if not c.info
        )
    )


def forward_change(cid: str, recompiles: Sequence[Recompile]) -> tuple[Cause, Attribution] | None:
    """The retrace's own change: the first cause of its graphs, other than optimizer updates, that
    cites user lines."""
    for r in recompiles:
        if r.dynamo != cid:
            continue
        for a in r.attribution:
            c = r.causes[a.cause]
            if a.lines and not c.info and c.kind not in _UPDATES:
                return c, a
    return None


def follow_forward(recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]) -> tuple[Recompile, ...]:
    """Optimizer updates added or removed, the optimizer's state made and the new parameters'
    weights taken as inputs in a retrace's graphs (and in the same change repeated at the call
    site on a later step) cited at the retrace's forward change, with its fix."""
    out: list[Recompile] = []
    for r in recompiles:
        cid = r.dynamo
        if not cid and not r.expected and not r.first_of_program:
            # the same change a retrace's graph at this call site made, compiled again a step later
            # (as diffed: a fold may have renamed its kinds)
            same = [
                e.dynamo
                for e in recompiles
                if e.dynamo and e.sync < r.sync and e.call_site == r.call_site and _change(e) == _change(r)
            ]
            cid = same[-1] if same else ""
        retrace = retraces.get(cid)
        forward = forward_change(cid, recompiles) if retrace and not retrace.expected else None
        hit = (
            [
                a
                for a in r.attribution
                if r.causes[a.cause] is not forward[0] and (_optimizer_updates(r, a) or _new_weights(r, a))
            ]
            if forward
            else []
        )
        if not forward or not hit:
            out.append(r)
            continue
        cause, where = forward
        at = f"({cause.kind} at {where.lines[0]})"
        said = {a.cause: _folded(r.causes[a.cause], a, cause, at) for a in hit}
        causes = tuple(said[i][0] if i in said else c for i, c in enumerate(r.causes))
        attribution = tuple(
            replace(said[a.cause][1], lines=tuple(dict.fromkeys(where.lines + a.lines))) if a in hit else a
            for a in r.attribution
        )
        out.append(
            replace(
                r,
                causes=causes,
                attribution=attribution,
                lines=tuple(dict.fromkeys(where.lines + r.lines)),
            )
        )
    return tuple(out)
