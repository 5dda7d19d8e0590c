"""`attribute`: compiler directives changed and nothing else. Frontend attributes, as when
`compute_on('device_host')` (`_xla_compute_type`), a scheduling group or a composite op's
attributes are set on some calls only; a custom-call's `backend_config`, the configuration its
kernel is built from (a LAPACK `uplo`, a Pallas kernel's parameters). XLA compiles from these, so
each set is another program. Shardy's `xla.sdy.*` entries are shardings (the `sharding`
recognizer runs first and takes them)."""

from __future__ import annotations

from xlagraph.canonical.attributes import frontend_entries
from xlagraph.diagnose.causes import Cause, CauseKind, Change
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.recognizers._causes import merge

__all__ = ["RECOGNIZER"]

HINT = fix("attribute.annotation")
CONFIG_HINT = fix("attribute.backend_config")
_DIRECTIVES = ("frontend_attributes", "backend_config")


def _changed_keys(old: str, new: str) -> set[str]:
    a, b = (dict(e.partition("=")[::2] for e in frontend_entries(t)) for t in (old, new))
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


def _summary(changes: list[Change]) -> str:
    examples = fmt_list([f"{ch.left}: {ch.old or '(none)'} -> {ch.new or '(none)'}" for ch in changes], 2)
    front = [ch for ch in changes if ch.what == "frontend_attributes"]
    parts = []
    if front:
        keys = sorted(set().union(*(_changed_keys(ch.old, ch.new) for ch in front)))
        parts.append(f"XLA frontend attributes ({', '.join(keys[:4])})")
    if len(front) < len(changes):
        parts.append("a custom kernel's backend_config")
    return (
        f"{' and '.join(parts)} changed on {len({ch.left for ch in changes})} instruction(s) "
        f"({examples}); XLA compiles from them, so this is another program"
    )


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    found = [i for i, c in enumerate(pending) if c.attribute_only(*_DIRECTIVES)]
    if not found:
        return NOTHING
    changes = [ch for i in found for ch in pending[i].changes]
    config = any(ch.what == "backend_config" for ch in changes)
    hint = CONFIG_HINT if config else HINT
    cause = merge(CauseKind.ATTRIBUTE, _summary(changes), [pending[i] for i in found], hint=hint)
    return Recognized((cause,), frozenset(found))


RECOGNIZER = Recognizer("annotation", _recognize)
