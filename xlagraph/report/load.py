"""What `xlagraph report SRC` reads: a capture folder or a plain XLA_SAVE_TENSORS_FILE dump.

A capture folder is a directory holding `meta.json` or `journal.jsonl`, or whose subfolders do
(one per process of an `xmp.spawn` run); it is read by `xlagraph.capture.read_capture`, imported
only when needed. Anything else must be an XLA_SAVE_TENSORS_FILE dump (`save.hlo.0`).
"""

from __future__ import annotations

from pathlib import Path

from xlagraph.errors import InputError
from xlagraph.report.savefile import runlog_from_save_file
from xlagraph.runlog import RunLog

__all__ = ["CAPTURE_MARKERS", "is_capture_dir", "load_runs"]

CAPTURE_MARKERS = ("meta.json", "journal.jsonl")


def _has_marker(folder: Path) -> bool:
    return any((folder / name).is_file() for name in CAPTURE_MARKERS)


def is_capture_dir(path: str) -> bool:
    """True for a capture folder or a folder of per-process capture folders."""
    p = Path(path)
    if not p.is_dir():
        return False
    if _has_marker(p):
        return True
    try:
        return any(child.is_dir() and _has_marker(child) for child in p.iterdir())
    except OSError:
        return False


def load_runs(src: str) -> tuple[RunLog, ...]:
    """One `RunLog` per process: several for a multi-process capture, one for a save file."""
    p = Path(src)
    if not p.exists():
        raise InputError(src, "no such file or directory")
    if is_capture_dir(src):
        try:
            from xlagraph.capture import read_capture
        except ImportError as e:
            raise InputError(
                src, f"is a capture folder, but this installation cannot read captures ({e})"
            ) from None
        logs = tuple(read_capture(src))
        if not logs:
            raise InputError(src, "capture folder holds no recorded process")
        return logs
    if p.is_dir():
        raise InputError(
            src,
            "not a capture folder (no meta.json or journal.jsonl in it or its subfolders); "
            "for a --xla_dump_to directory use `xlagraph graphs`",
        )
    return (runlog_from_save_file(src),)
