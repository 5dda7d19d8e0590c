"""A process's `meta.json`: read, format-checked and validated, and the roots its paths are under."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.capture.reader.journal import JournalContents, json_error_reason
from xlagraph.capture.records import check_meta
from xlagraph.errors import InputError
from xlagraph.parse.input_files import read_bytes


def capture_roots(meta: dict[str, Any]) -> list[str]:
    """The capturing machine's working directory and import roots that a killed run's meta.json
    keeps (a clean exit leaves "." and none): what its unpaired dumps' paths are relative to."""
    cwd = meta.get("cwd")
    roots = [cwd] if isinstance(cwd, str) and cwd != "." else []
    extra = meta.get("import_roots")
    return roots + [r for r in extra if isinstance(r, str)] if roots and isinstance(extra, list) else roots


def process_roots(proc_dir: str) -> list[str]:
    """`capture_roots` of a process folder's meta.json; none when it is missing or unreadable."""
    try:
        meta, _ = check_meta(json.loads(read_bytes(Path(proc_dir) / fmt.META).decode("utf-8")))
    except Exception:  # (no meta.json, or not JSON: the reader of the capture says so)
        return []
    return capture_roots(meta)


def read_meta(p: Path, acc: JournalContents) -> dict[str, Any]:
    path = p / fmt.META
    if not os.path.lexists(path):
        acc.notes.append(f"{fmt.META} missing")
        return {}
    data = read_bytes(path)
    try:
        raw = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as e:
        acc.notes.append(f"{fmt.META} unreadable ({json_error_reason(e)}); ignored")
        return {}
    _check_format(path, raw, acc)
    meta, dropped = check_meta(raw)
    acc.notes.extend(dropped)
    return meta


def _check_format(path: Path, raw: Any, acc: JournalContents) -> None:
    """Another tool's folder is refused by name; a newer xlagraph's capture is read as far as this
    reader knows its format (records it does not know are skipped), and says so."""
    if not isinstance(raw, dict):
        return
    kind = raw.get("format")
    if kind is not None and kind != fmt.FORMAT:
        why = f"not an xlagraph capture (format {str(kind)[:40]!r}, not {fmt.FORMAT!r})"
        raise InputError(str(path), why)
    version = raw.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > fmt.VERSION:
        acc.notes.append(
            f"written by a newer xlagraph (capture format {version}; this one reads {fmt.VERSION}, "
            f"xlagraph {str(raw.get('xlagraph', '?'))[:20]} wrote it): read as far as this version "
            "knows; upgrade xlagraph to read all of it"
        )
