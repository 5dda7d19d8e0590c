"""A change of parallelism (world size, tensor-parallel degree, sharding strategy) between two graphs.

Collectives over other replica groups or added/removed, with input shapes that shrink or grow
by a whole factor (768 -> 384: weights split over twice the devices), or collectives of another
kind (reduce-scatter where the other graph all-reduces): one root reason. The
collectives, shard shapes, scaling constants (1/world_size) and the structure around them are
folded into one `collective` cause, with a hint about parallelism, not about bucketing.
"""

from __future__ import annotations

from xlagraph.diagnose.causes import INTERFACE, Cause, CauseKind
from xlagraph.diagnose.collectives import GROUPS_CHANGED, collectives
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.shapes import dims_of, whole_factors

__all__ = ["RECOGNIZER"]

HINT = fix("collective.parallel_layout")
_FOLDED = (
    CauseKind.PARAMETER_SHAPE,
    CauseKind.CONSTANT_VALUE,
    CauseKind.ATTRIBUTE,
    CauseKind.STRUCTURE,
    *INTERFACE,
)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    coll = [i for i, c in enumerate(pending) if c.kind is CauseKind.COLLECTIVE]
    if not coll:
        return NOTHING
    summary = pending[coll[0]].summary
    groups_changed = pending[coll[0]].case == GROUPS_CHANGED
    shapes = [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_SHAPE]
    split = bool(shapes) and all(
        dims_of(ch.old) != dims_of(ch.new) and whole_factors(ch.old, ch.new)
        for i in shapes
        for ch in pending[i].changes
        if ch.what == "shape"
    )
    kinds_a = {c.kind for c in collectives(evidence.left)}
    kinds_b = {c.kind for c in collectives(evidence.right)}
    # Another kind of collective (reduce-scatter and all-gather beside or instead of all-reduce):
    # gradients and optimizer state sharded (ZeRO-1, FSDP) or not, another strategy.
    strategy = bool(kinds_a and kinds_b and kinds_a != kinds_b)
    # Collectives in one graph only, and inputs of other shapes: one graph runs split over devices
    # (tensor parallelism with a vocabulary-split embedding reshapes more than by one factor).
    appeared = bool(kinds_a) != bool(kinds_b) and bool(shapes)
    if not (groups_changed or split or strategy or appeared):
        return NOTHING  # regrouped over the same devices and shapes: bucketing, said by `collective`
    folded = [i for i, c in enumerate(pending) if c.kind in _FOLDED]
    if groups_changed:
        what = "replica groups changed"
    elif split:
        what = "inputs split by a whole factor"
    elif appeared:
        what = f"collectives only in {'B' if kinds_b else 'A'}, and inputs of other shapes"
    else:
        only_a, only_b = sorted(kinds_a - kinds_b), sorted(kinds_b - kinds_a)
        what = "another collective strategy: " + "; ".join(
            part
            for part in (
                f"{', '.join(only_b)} only in B" if only_b else "",
                f"{', '.join(only_a)} only in A" if only_a else "",
            )
            if part
        )
        if "reduce-scatter" in only_a + only_b:
            what += " (results reduced and split across ranks instead of reduced whole)"
    text = f"the parallel layout changed ({what}): {summary}" + (
        f"; {sum(pending[i].count for i in folded)} following change(s) folded in" if folded else ""
    )
    cause = merge(CauseKind.COLLECTIVE, text, [pending[i] for i in coll + folded], hint=HINT)
    return Recognized((cause,), frozenset(coll + folded))


RECOGNIZER = Recognizer("parallelism", _recognize)
