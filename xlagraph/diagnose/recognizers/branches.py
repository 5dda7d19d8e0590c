"""A `conditional` with another number of branches (`lax.switch` over more functions, a Python
list of branches that grew): the index is clamped to the last branch, so the clamp's bound changes
with the count. That constant is part of the structural change, not a Python scalar of its own."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import merge

__all__ = ["RECOGNIZER"]


def _branch_counts(evidence: Evidence, cause: Cause) -> tuple[int, int]:
    """(A's, B's) largest branch count among the cause's conditionals; 0 where it has none."""
    counts = [0, 0]
    for canon, ins in evidence.instructions(cause):
        if ins.opcode == "conditional":
            side = canon is evidence.right
            counts[side] = max(counts[side], len(ins.called))
    return counts[0], counts[1]


def _integer(text: str) -> int | None:
    value = text.rsplit(" ", 1)[-1]
    return int(value) if value.lstrip("-").isdigit() else None


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    for i, c in enumerate(pending):
        if c.kind is not CauseKind.STRUCTURE:
            continue
        a, b = _branch_counts(evidence, c)
        if not a or not b or a == b:
            continue
        bounds = [
            j
            for j, k in enumerate(pending)
            if k.kind is CauseKind.CONSTANT_VALUE
            and k.changes
            and all(
                (x := _integer(ch.old)) is not None and (y := _integer(ch.new)) is not None and y - x == b - a
                for ch in k.changes
            )
        ]
        if not bounds:
            return NOTHING
        summary = f"{c.summary}; a conditional has {b} branches where it had {a}, and its index bound follows"
        cause = merge(CauseKind.STRUCTURE, summary, [c] + [pending[j] for j in bounds], hint=c.hint)
        return Recognized((cause,), frozenset([i, *bounds]))
    return NOTHING


RECOGNIZER = Recognizer("branches", _recognize)
