"""`attribute`: XLA frontend attributes changed and nothing else, as when `compute_on('device_host')`
(`_xla_compute_type`), a scheduling group or a composite op's attributes are set on some calls
only. XLA compiles from these directives, so each set is another program. Shardy's `xla.sdy.*`
entries are shardings (the `sharding` recognizer runs first and takes them)."""

from __future__ import annotations

from xlagraph.canonical.hashes import frontend_entries
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.common import fmt_list
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._common import merge

__all__ = ["RECOGNIZER"]

HINT = (
    "frontend attributes are directives XLA compiles from (host offloading with compute_on, "
    "scheduling groups, composite ops): apply the same annotation to the same code on every step"
)


def _only_frontend(cause: Cause) -> bool:
    return (
        cause.kind is CauseKind.ATTRIBUTE
        and bool(cause.changes)
        and all(ch.what == "frontend_attributes" for ch in cause.changes)
    )


def _changed_keys(old: str, new: str) -> set[str]:
    a, b = (dict(e.partition("=")[::2] for e in frontend_entries(t)) for t in (old, new))
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    found = [i for i, c in enumerate(pending) if _only_frontend(c)]
    if not found:
        return NOTHING
    changes = [ch for i in found for ch in pending[i].changes]
    keys = sorted(set().union(*(_changed_keys(ch.old, ch.new) for ch in changes)))
    examples = [f"{ch.left}: {ch.old or '(none)'} -> {ch.new or '(none)'}" for ch in changes]
    summary = (
        f"XLA frontend attributes ({', '.join(keys[:4])}) changed on {len(changes)} instruction(s) "
        f"({fmt_list(examples, 2)}); XLA compiles from them, so this is another program"
    )
    cause = merge(CauseKind.ATTRIBUTE, summary, [pending[i] for i in found], hint=HINT)
    return Recognized((cause,), frozenset(found))


RECOGNIZER = Recognizer("annotation", _recognize)
