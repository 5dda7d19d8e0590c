"""The journal (`journal.jsonl`) of one process, read record by record into `JournalContents`.

A partial last line (a run killed while writing it) is ignored with a note; a bad record is
skipped and counted in a note (`records.py` validates each).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.capture.records import check_record
from xlagraph.ir import Frame
from xlagraph.parse.input_files import read_bytes
from xlagraph.source_paths import portable_path


@dataclass
class JournalContents:
    """Journal contents as they are read."""

    frames: dict[int, tuple[Frame, ...]] = field(default_factory=dict)
    causes: dict[int, str] = field(default_factory=dict)
    graphs: dict[int, dict[str, Any]] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    start: dict[str, Any] = field(default_factory=dict)
    end: dict[str, Any] | None = None
    rank: int | None = None
    world: int | None = None
    cwd: str = ""  # an older capture's recorded working directory: its user paths are under it


def json_error_reason(e: BaseException) -> str:
    return "nested too deeply" if isinstance(e, RecursionError) else " ".join(str(e).split())[:80]


def read_journal(path: Path, acc: JournalContents) -> None:
    if not os.path.lexists(path):
        acc.notes.append(f"{fmt.JOURNAL} missing: the process stopped before its first record")
        return
    lines = read_bytes(path).split(b"\n")
    last = len(lines) - 1
    skipped: list[tuple[int, str]] = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError) as e:
            if n - 1 == last:  # no newline after it: cut short by a kill
                acc.notes.append(
                    f"{fmt.JOURNAL}:{n}: the last record is incomplete (the run was killed while writing "
                    "it); ignored"
                )
            else:
                skipped.append((n, f"not JSON ({json_error_reason(e)})"))
            continue
        why = check_record(record)
        if why:
            skipped.append((n, why))
            continue
        _apply(record, acc)
    if skipped:
        n, why = skipped[0]
        more = f"; {len(skipped) - 1} more" if len(skipped) > 1 else ""
        acc.notes.append(
            f"{fmt.JOURNAL}: {len(skipped)} bad record(s) skipped (line {n}: {why}{more}); "
            "what they recorded is missing from this report"
        )


def _apply(r: dict[str, Any], acc: JournalContents) -> None:
    kind = r.get("k")
    if kind == fmt.STEP:
        acc.steps.append(r)
    elif kind == fmt.GRAPH:
        acc.graphs.setdefault(r["id"], {}).update({k: v for k, v in r.items() if k != "k"})
    elif kind == fmt.FRAMES:
        acc.frames[r["id"]] = tuple(Frame(f[0], portable_path(f[1], acc.cwd), f[2]) for f in r["v"])
    elif kind == fmt.CAUSE:
        acc.causes[r["id"]] = r["v"]
    elif kind == fmt.NOTE:
        acc.notes.append(r["v"])
    elif kind == fmt.START:
        acc.start = r
    elif kind == fmt.END:
        acc.end = r
    elif kind == fmt.RANK:
        acc.rank, acc.world = r.get("rank"), r.get("world")


def why_unfinished(acc: JournalContents) -> str:
    if any("capture disabled after error" in n for n in acc.notes):
        return "capture was disabled after an error"
    return "the run did not exit cleanly"
