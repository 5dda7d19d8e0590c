"""`sharding`: a sharding annotation changed (SPMD `mark_sharding`, JAX `NamedSharding`).

The collectives, shard shapes and attribute changes that follow from it are the same root
reason and are folded into this one cause.
"""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._common import merge

__all__ = ["RECOGNIZER"]

_FOLLOWERS = (
    CauseKind.COLLECTIVE,
    CauseKind.PARAMETER_SHAPE,
    CauseKind.CONSTANT_VALUE,
    CauseKind.ATTRIBUTE,
    CauseKind.STRUCTURE,
)


def _is_sharding(cause: Cause) -> bool:
    return cause.kind is CauseKind.ATTRIBUTE and any(ch.what == "sharding" for ch in cause.changes)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    core = [i for i, c in enumerate(pending) if _is_sharding(c)]
    if not core:
        return NOTHING
    followers = [i for i, c in enumerate(pending) if i not in core and c.kind in _FOLLOWERS]
    changes = [ch for i in core for ch in pending[i].changes if ch.what == "sharding"]
    examples = "; ".join(f"{ch.old or '(none)'} -> {ch.new or '(none)'}" for ch in changes[:2])
    summary = f"the sharding of {len(changes)} tensor(s) changed ({examples})"
    if followers:
        kinds = sorted({str(pending[i].kind) for i in followers})
        summary += f"; what follows from it is folded in ({', '.join(kinds)})"
    cause = merge(CauseKind.SHARDING, summary, [pending[i] for i in core + followers])
    return Recognized((cause,), frozenset(core + followers))


RECOGNIZER = Recognizer("sharding", _recognize)
