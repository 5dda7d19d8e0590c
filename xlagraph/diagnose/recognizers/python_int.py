"""`attribute`: a Python int reached an op parameter (slice bounds, dimensions, sizes), as when a
step counter or a Python length indexes a tensor: each value is another graph."""

from __future__ import annotations

import re

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._common import merge

__all__ = ["RECOGNIZER"]

_INT = re.compile(r"-?\d+")


def _value(text: str) -> str:
    """`s64[] 3` -> `3`."""
    return text.rsplit(" ", 1)[-1]


_INDEXING = frozenset({"slice", "dynamic-slice", "dynamic-update-slice", "pad", "iota", "gather", "scatter"})


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    attrs = [i for i, c in enumerate(pending) if c.kind is CauseKind.ATTRIBUTE and c.changes]
    if not attrs:
        return NOTHING
    # The same int baked as a constant elsewhere (the backward of the indexing) is the same reason.
    olds = {n for i in attrs for ch in pending[i].changes for n in _INT.findall(ch.old)}
    news = {n for i in attrs for ch in pending[i].changes for n in _INT.findall(ch.new)}
    same_int = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.CONSTANT_VALUE
        and c.changes
        and all(_value(ch.old) in olds and _value(ch.new) in news for ch in c.changes)
    ]
    ops = [ins.opcode for i in attrs for _, ins in evidence.instructions(pending[i])]
    examples = [
        f"{ch.left}: {ch.what} {ch.old or '(none)'} -> {ch.new or '(none)'}"
        for i in attrs
        for ch in pending[i].changes
    ]
    indexing = any(op in _INDEXING for op in ops)
    what = (
        "a Python int used to index reached the graph"
        if indexing
        else "a Python value reached an op parameter"
    )
    n = len(examples)
    summary = f"{what}: {n} op parameter(s) changed ({'; '.join(examples[:3])}{' ...' if n > 3 else ''})"
    cause = merge(CauseKind.ATTRIBUTE, summary, [pending[i] for i in attrs + same_int], count=n)
    return Recognized((cause,), frozenset(attrs + same_int))


RECOGNIZER = Recognizer("python_int", _recognize)
