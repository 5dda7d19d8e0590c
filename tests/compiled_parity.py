"""What torch printed (TORCH_LOGS=recompiles,graph_breaks) against what xlagraph names, for one
captured scenario of fixtures/torch_xla/compiled: shared by tests/test_compiled.py and the
held-out scoring (benchmarks/score_compiled.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_HEAD = re.compile(
    r"^\S+ \S+ \d+ \S+\] \[(?P<id>[^\]]*)\] \[__(?P<what>recompiles|graph_breaks)\] ?(?P<text>.*)$"
)
_FAILURE = re.compile(r"^\s+- (?P<g>\d+/\d+: .*?)\s*(?:#.*)?$")
_BREAK_AT = re.compile(
    r"Graph break (?:\(user stack suppressed due to duplicate graph break\) )?in user code at (\S+):(\d+)"
)


@dataclass(frozen=True)
class TorchSaid:
    recompiles: tuple[tuple[str, tuple[str, ...]], ...]  # (compile id, guard failures without notes)
    breaks: tuple[tuple[str, int, str], ...]  # (file, line, reason), distinct


def torch_said(path: Path) -> TorchSaid:
    recompiles: list[tuple[str, list[str]]] = []
    breaks: list[tuple[str, int, str]] = []
    pending_at: tuple[str, int] | None = None
    for raw in path.read_text().splitlines():
        m = _HEAD.match(raw)
        if not m:
            continue
        text = m["text"]
        if m["what"] == "recompiles":
            if text.startswith("Recompiling function"):
                recompiles.append((m["id"], []))
            elif (f := _FAILURE.match(text)) and recompiles:
                recompiles[-1][1].append(re.sub(r"\s+#.*$", "", f["g"]).strip())
        else:
            if b := _BREAK_AT.search(text):
                pending_at = (b.group(1), int(b.group(2)))
            elif text.startswith("Graph Break Reason:") and pending_at:
                item = (*pending_at, text.removeprefix("Graph Break Reason:").strip())
                if item not in breaks:
                    breaks.append(item)
                pending_at = None
    return TorchSaid(tuple((i, tuple(g)) for i, g in recompiles), tuple(breaks))
