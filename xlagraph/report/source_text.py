"""Where the source lines of graphs read from files are read (`diff A B`, `report FILE`). Apart
from `report.build`, which keeps its name, so that a diff reads them without importing the
report's code."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from xlagraph.diagnose.frames import SourceText, StoredText

__all__ = ["source_text_near"]

_BASES_ABOVE = 4


def source_text_near(paths: Iterable[str]) -> SourceText:
    """Where the lines of graphs read from files are read (`diff A B`, `report FILE`): the stored
    sources of the capture process folder a file lies in (a dump under `<process>/hlo/`, copied
    out with its folder or not); else the user's files under the first file's folder and the few
    folders above it (a project that keeps its dumps in a subfolder)."""
    from xlagraph.capture.stored_sources import StoredSources
    from xlagraph.source_paths import add_capture_roots

    folders = [Path(os.path.abspath(p)).parent for p in paths if p]
    found = []
    for folder in folders:
        for candidate in (folder, *folder.parents[:_BASES_ABOVE]):
            stored = StoredSources.load(str(candidate))
            if stored is not None:
                from xlagraph.capture.reader.meta import (
                    process_roots,
                )  # (here: the capture's reader is large)

                found.append(stored)
                add_capture_roots(process_roots(str(candidate)))  # (a dump it never made portable)
                break
    if found:
        return SourceText(stored=found[0] if len(found) == 1 else _Either(tuple(found)))
    if not folders:
        return SourceText()
    return SourceText(bases=tuple(str(p) for p in (folders[0], *folders[0].parents[:_BASES_ABOVE])))


@dataclass(frozen=True)
class _Either:
    """The stored sources of two captures (`diff` of a graph of each): a line from the first that
    stored its file."""

    stores: tuple[StoredText, ...]

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(k for s in self.stores for k in s.key)

    def knows(self, path: str) -> bool:
        return any(s.knows(path) for s in self.stores)

    def line(self, path: str, n: int) -> str:
        return next((s.line(path, n) for s in self.stores if s.knows(path)), "")
