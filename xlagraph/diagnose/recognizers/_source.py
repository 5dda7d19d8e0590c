"""Reading the user's code around a cited line: its text, the files the graphs cite, lines
that match, the function a line is in and the lines that call it. Text comes from the capture's
stored sources (`diagnose.frames.source_line`), never from the analysing machine."""

from __future__ import annotations

import re
from collections.abc import Iterable

from xlagraph.diagnose.evidence import Evidence
from xlagraph.diagnose.frames import is_library, source_line, source_lines, split_location
from xlagraph.diagnose.recognizers._dispatch import calls_through_table
from xlagraph.diagnose.recognizers._statements import (
    MAX_SCANNED_LINES,
    calls_of,
    calls_through_loop,
    enclosing_function,
)
from xlagraph.ir import Frame
from xlagraph.source_paths import is_library_path, portable_frames, portable_path

__all__ = [
    "BUILDERS",
    "DEF",
    "MAX_SCANNED_LINES",
    "NAME",
    "calls_of_function",
    "def_above",
    "enclosing_function",
    "lines_matching",
    "source_text",
    "user_files",
    "user_lines",
]

# Methods that build an object: what they assign exists from the first step (the value a first
# compile assumed), not a change made mid-run.
BUILDERS = frozenset({"__init__", "__post_init__", "setup", "build"})


DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)\s*\(")


NAME = re.compile(r"\b([A-Za-z_]\w*)\b")


def source_text(location: str) -> str:
    """The text of `file:line`, or `` when it cannot be read."""
    file, line = split_location(location)
    if not file or not line:
        return ""
    return source_line(file, line)


def user_files(evidence: Evidence) -> list[str]:
    """The user's source files the two graphs cite (frames and metadata of the entries, the sync
    lines), in first-seen order: where to look for a line no instruction carries, such as the
    `with torch.autocast(...)` around the code that produced the ops."""
    files: dict[str, None] = {}
    for site in (evidence.context.call_site, evidence.context.baseline_call_site):
        file = site.rpartition(":")[0]
        if file and not is_library_path(file):
            files.setdefault(file)
    for canon in (evidence.left, evidence.right):
        module = canon.module
        for frames in module.stack_frames.values():
            for f in portable_frames(frames):
                if not is_library(f):
                    files.setdefault(f.file)
        # the entry's metadata source files, each once, first seen first: the core's handle has
        # them (a 600K-instruction entry is otherwise walked for a few files)
        for file in map(portable_path, canon.entry.core.source_files()):  # type: ignore[attr-defined]
            if file and file not in files and not is_library_path(file):
                files.setdefault(file)
    return list(files)


def user_lines(evidence: Evidence, limit: int = 2000) -> list[str]:
    """Distinct `file:line` of the user's frames the two graphs' instructions cite (every frame
    of their stacks, so the lines of the step's own code that reached library ops too), in
    first-seen order."""
    seen: dict[str, None] = {}
    for canon in (evidence.left, evidence.right):
        module = canon.module
        frames = [f for fs in module.stack_frames.values() for f in portable_frames(fs)]
        for ins in module.entry.instructions:  # (torch_xla writes the innermost frame only)
            md = ins.metadata
            if md is not None and md.source_file and md.source_line > 0:
                frames.append(Frame("", portable_path(md.source_file), md.source_line))
        for f in frames:
            if f.line > 0 and f"{f.file}:{f.line}" not in seen and not is_library(f):
                seen[f"{f.file}:{f.line}"] = None
                if len(seen) >= limit:
                    return list(seen)
    return list(seen)


def lines_matching(files: Iterable[str], pattern: re.Pattern[str], limit: int = 3) -> list[str]:
    """`file:line` of the first code lines (not comments) of `files` that match `pattern`."""
    out: list[str] = []
    for file in files:
        for n, text in source_lines(file, MAX_SCANNED_LINES):
            code = text.split("#", 1)[0]
            if pattern.search(code):
                out.append(f"{file}:{n}")
                if len(out) >= limit:
                    return out
    return out


def def_above(file: str, n: int) -> int:
    """The line of the nearest `def` at or above line `n` (within 200 lines), 0 when none."""
    for k in range(n, max(0, n - 200), -1):
        if DEF.match(source_line(file, k)):
            return k
    return 0


def calls_of_function(
    location: str,
    files: Iterable[str] = (),
    limit: int = 3,
    through_loops: bool = False,
    tables_in: Iterable[str] = (),
) -> list[str]:
    """The lines (its own file first, then `files`) that call the function `location` is in; with
    `through_loops`, also the calls of a loop variable over what names it (`calls_through_loop`);
    then the calls through a table of functions that holds it (`calls_through_table`), in its
    own file and `tables_in` (a helper module's functions are dispatched from the caller's)."""
    file, line = split_location(location)
    name = enclosing_function(file, line) if file and line else ""
    if not name:
        return []
    found = calls_of(name, [file, *files], limit)
    if through_loops:
        found += calls_through_loop(name, [file, *files], limit)
    tables = list(tables_in)
    return found + calls_through_table(name, [file, *tables], limit) if tables else found
