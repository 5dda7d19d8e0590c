"""Activation checkpointing on in one graph only (`torch.utils.checkpoint`, torch_xla's
`checkpoint`, `jax.checkpoint` / `remat`): the backward pass recomputes the forward behind an
optimization barrier, so one graph has `opt-barrier`s the other lacks, the forward's ops again and,
under tensor parallelism, the forward's all-reduces again. Without this, the extra all-reduces
read as 'collectives regrouped' and the recomputed forward as an unknown structure change.

Named as `structure` (the program's own shape differs; no setting of a value explains it), with
what it is and where, and only when nothing but structure, collectives, order and layout differ.
"""

from __future__ import annotations

from collections import Counter

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._causes import merge

__all__ = ["RECOGNIZER"]

_FOLDED = (
    CauseKind.STRUCTURE,
    CauseKind.COLLECTIVE,
    CauseKind.PARAMETER_PERMUTATION,
    CauseKind.OUTPUT_PERMUTATION,
    CauseKind.LAYOUT,
)
HINT = fix("structure.checkpointing")


def _barriers(canon: CanonicalModule) -> int:
    return sum(
        1
        for comp in canon.computations.values()
        for ins in comp.computation.instructions
        if ins.opcode == "opt-barrier"
    )


def _ops(canon: CanonicalModule) -> Counter[str]:
    return Counter(ins.opcode for ins in canon.entry.computation.instructions)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    if not pending or any(c.kind not in _FOLDED for c in pending):
        return NOTHING
    left, right = _barriers(evidence.left), _barriers(evidence.right)
    if left == right:
        return NOTHING
    more, side = ("B", evidence.right) if right > left else ("A", evidence.left)
    other = evidence.left if side is evidence.right else evidence.right
    mine, theirs = _ops(side), _ops(other)
    # Recomputation adds work; a graph with barriers but less of everything is another model.
    if sum(mine.values()) <= sum(theirs.values()):
        return NOTHING
    extra = {op: n - theirs.get(op, 0) for op, n in mine.items() if n > theirs.get(op, 0)}
    reduces = sum(
        n for op, n in extra.items() if op.startswith(("all-reduce", "reduce-scatter", "all-gather"))
    )
    summary = (
        f"activation checkpointing in {more} only: {abs(right - left)} optimization barrier(s) more and "
        f"{sum(extra.values())} op(s) more, its forward recomputed in the backward pass"
        + (f" ({reduces} collective(s) of that forward again)" if reduces else "")
    )
    picked = list(range(len(pending)))
    cause = merge(CauseKind.STRUCTURE, summary, [pending[i] for i in picked], hint=HINT)
    return Recognized((cause,), frozenset(picked))


RECOGNIZER = Recognizer("checkpointing", _recognize)
