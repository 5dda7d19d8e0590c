"""What a capture folder holds, in a few numbers (`xlagraph run` ends with them), and its process
folders (which `xlagraph run --overwrite` replaces)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xlagraph.errors import reading

__all__ = ["Captured", "captured", "process_folders"]


@dataclass(frozen=True)
class Captured:
    """A capture's size: `processes`, `steps`, `compiles` (graph compiles), distinct `graphs`."""

    processes: int
    steps: int
    compiles: int
    graphs: int


def captured(capture_dir: str | os.PathLike[str]) -> Captured:
    """Count what `capture_dir` holds; `XlagraphError` when it holds no capture."""
    from xlagraph.capture.reader import read_capture

    with reading(str(capture_dir)):
        runs = read_capture(capture_dir)
    return Captured(
        processes=len(runs),
        steps=sum(len(r.steps) for r in runs),
        compiles=sum(sum(s.compiled for s in r.syncs) for r in runs),
        graphs=sum(len(r.graphs) for r in runs),
    )


def process_folders(capture_dir: str | os.PathLike[str]) -> tuple[Path, ...]:
    """The process folders (`<host>-<pid>`) of a capture folder, none when it is not one."""
    from xlagraph.capture.files import META

    root = Path(capture_dir)
    if not root.is_dir():
        return ()
    return tuple(sorted(p for p in root.iterdir() if (p / META).exists()))
