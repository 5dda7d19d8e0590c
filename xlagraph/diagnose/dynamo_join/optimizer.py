"""The optimizer's graph of a retrace: updates that follow from the forward's change.

Under torch.compile with the optimizer in a lazy graph of its own, a retrace that changes which
parameters the forward uses (a module attribute that runs one layer more, a branch) changes which
get gradients, so the optimizer's graph updates more (or fewer) of them: outputs added, read
alone as tensors kept alive. They are the forward's change seen in the optimizer; its cause (the
guard's line, its fix) is theirs. So is the same change on the next step, where the optimizer's
graph compiles once more without the bridge's full sync (a graph no retrace made, of the same
call site, with the same change).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import HINTS, Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import Retrace
from xlagraph.diagnose.frames import is_optimizer_code
from xlagraph.diagnose.recompile import Attribution, Recompile

__all__ = ["follow_forward"]

_UPDATES = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)
_BRIDGE = "torch_xla/_dynamo/"


def _optimizer_updates(r: Recompile, a: Attribution) -> bool:
    """`a` is outputs added or removed with the generic text, computed in optimizer code (from
    inputs the bridge hands over, where its lines say so)."""
    c = r.causes[a.cause]
    return (
        c.kind in _UPDATES
        and not c.info
        and c.hint == HINTS[c.kind]
        and any(is_optimizer_code(x) for x in a.library_lines)
        and all(is_optimizer_code(x) or x.startswith(_BRIDGE) for x in a.library_lines)
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


def _forward(cid: str, recompiles: Sequence[Recompile]) -> tuple[Cause, Attribution] | None:
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
    """Optimizer updates added or removed in a retrace's graphs (and in the same change repeated
    at the call site on a later step) cited at the retrace's forward change, with its fix."""
    out: list[Recompile] = []
    for r in recompiles:
        cid = r.dynamo
        if not cid and not r.expected and not r.first_of_program:
            # the same change a retrace's graph at this call site made, compiled again a step later
            same = [
                e.dynamo
                for e in out
                if e.dynamo and e.sync < r.sync and e.call_site == r.call_site and _change(e) == _change(r)
            ]
            cid = same[-1] if same else ""
        retrace = retraces.get(cid)
        forward = _forward(cid, recompiles) if retrace and not retrace.expected else None
        hit = [a for a in r.attribution if _optimizer_updates(r, a)] if forward else []
        if not forward or not hit:
            out.append(r)
            continue
        cause, where = forward
        fixed = {a.cause for a in hit}
        said = (
            f": the optimizer's updates of the parameters the retraced forward now trains "
            f"({cause.kind} at {where.lines[0]})"
        )
        causes = tuple(
            replace(c, summary=c.summary + said, hint=cause.hint) if i in fixed else c
            for i, c in enumerate(r.causes)
        )
        attribution = tuple(
            # "2 extra output(s): the live tensor(s) kept alive ..." -> what they are instead
            replace(
                a,
                summary=a.summary.split(":", 1)[0] + said,
                lines=tuple(dict.fromkeys(where.lines + a.lines)),
            )
            if a in hit
            else a
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
