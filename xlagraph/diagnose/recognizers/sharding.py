"""`sharding`: a sharding annotation changed (SPMD `mark_sharding`, JAX `NamedSharding`).

The collectives, shard shapes and attribute changes that follow from it are the same root
reason and are folded into this one cause.
"""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind, Change
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.shapes import whole_factors

__all__ = ["RECOGNIZER"]

_FOLLOWERS = (
    CauseKind.COLLECTIVE,
    CauseKind.PARAMETER_SHAPE,
    CauseKind.CONSTANT_VALUE,
    CauseKind.ATTRIBUTE,
    CauseKind.STRUCTURE,
)


def _is_sharding_change(ch: Change) -> bool:
    """A `sharding=` change, or a Shardy one (`xla.sdy.sharding` in `frontend_attributes`, which
    also says what `sharding=` cannot: dimensions left open to propagation, `{?}`)."""
    return ch.what == "sharding" or (ch.what == "frontend_attributes" and "xla.sdy." in ch.old + ch.new)


def _is_sharding(cause: Cause) -> bool:
    return cause.kind is CauseKind.ATTRIBUTE and any(_is_sharding_change(ch) for ch in cause.changes)


def _annotations(evidence: Evidence, cause: Cause) -> tuple[list[str], list[str]] | None:
    """(A's, B's) `Sharding` custom-call annotations of a structural region made of nothing else
    (besides the ops they wrap, changed in place); None for any other region."""
    if cause.kind is not CauseKind.STRUCTURE:
        return None
    found: tuple[list[str], list[str]] = ([], [])
    for canon, ins in evidence.instructions(cause):
        if ins.opcode == "custom-call" and ins.attribute("custom_call_target", "") == '"Sharding"':
            found[canon is evidence.right].append(ins.attribute("sharding", "") or "")
    changed = {ch.what for ch in cause.changes}
    if not (found[0] or found[1]) or changed - {"opcode"}:
        return None
    return found


def _annotated(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    """Sharding annotations present in one graph only: SPMD keeps the sharding of the tensors a
    step updated, so from the second step on they carry it (expected once, info)."""
    regions = {i: a for i, c in enumerate(pending) if (a := _annotations(evidence, c)) is not None}
    if not regions:
        return NOTHING
    only_b = all(not a[0] for a in regions.values())
    specs = sorted({s for a in regions.values() for s in a[0] + a[1]})
    n = sum(len(a[0]) + len(a[1]) for a in regions.values())
    ctx = evidence.context
    warm_up = only_b and (ctx.first_graph or 0 <= ctx.step < 3)
    summary = (
        f"{n} sharding annotation(s) ({', '.join(specs[:3])}) only in {'B' if only_b else 'one graph'}"
        + (
            ": the tensors the first step updated carry their sharding from this step on; expected once"
            if warm_up
            else ""
        )
    )
    cause = merge(CauseKind.SHARDING, summary, [pending[i] for i in regions], info=warm_up)
    return Recognized((cause,), frozenset(regions))


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    core = [i for i, c in enumerate(pending) if _is_sharding(c)]
    if not core:
        return _annotated(evidence, pending)
    followers = [i for i, c in enumerate(pending) if i not in core and c.kind in _FOLLOWERS]
    changes = [ch for i in core for ch in pending[i].changes if ch.what == "sharding"] or [
        ch for i in core for ch in pending[i].changes if _is_sharding_change(ch)
    ]
    examples = "; ".join(f"{ch.old or '(none)'} -> {ch.new or '(none)'}" for ch in changes[:2])
    summary = f"the sharding of {len(changes)} tensor(s) changed ({examples})"
    # What a partitioned module shows of it: inputs in shard shapes, collectives added.
    split = [
        ch
        for i in followers
        if pending[i].kind is CauseKind.PARAMETER_SHAPE
        for ch in pending[i].changes
        if ch.what == "shape" and ch.old != ch.new and whole_factors(ch.old, ch.new)
    ]
    if split:
        summary += (
            f"; {len(split)} input(s) arrive as shards of another size "
            f"({fmt_list([f'{ch.old} -> {ch.new}' for ch in split], 2)})"
        )
    if any(pending[i].kind is CauseKind.COLLECTIVE for i in followers):
        summary += "; the collectives differ"
    if followers:
        kinds = sorted({str(pending[i].kind) for i in followers})
        summary += f"; what follows from it is folded in ({', '.join(kinds)})"
    warm_up = _settling(evidence, changes)
    if warm_up:
        summary += (
            ": inputs the first step produced arrive sharded from this step on (SPMD propagated "
            "their sharding); expected once"
        )
    cause = merge(CauseKind.SHARDING, summary, [pending[i] for i in core + followers], info=warm_up)
    return Recognized((cause,), frozenset(core + followers))


def _replicated(sharding: str) -> bool:
    return sharding.replace(" ", "") in ("", "{replicated}", "{maximal}")


def _settling(evidence: Evidence, changes: list) -> bool:  # type: ignore[type-arg]
    """The second graph of an SPMD run: only inputs, all replicated before and sharded now (the
    weights the first step updated come back with the sharding the partitioner gave them)."""
    ctx = evidence.context
    if not (ctx.first_graph or 0 <= ctx.step < 3) or not changes:
        return False
    params = evidence.right.entry.param_number
    return all(ch.right in params and _replicated(ch.old) and not _replicated(ch.new) for ch in changes)


RECOGNIZER = Recognizer("sharding", _recognize)
