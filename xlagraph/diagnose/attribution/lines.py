"""Which of a cause's lines are the user's: the graph's cited lines split into the user's and
library code's, and the user's script lines that call that library code."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import PurePath

from xlagraph.diagnose.frames import split_location
from xlagraph.source_paths import is_library_path

__all__ = ["LineReader", "calling_lines", "split_lines"]

LineReader = Callable[[str, int], str]


def _is_user_file(file: str, user_names: frozenset[str]) -> bool:
    """Full paths are judged by where they are; bare names (lazy IR `location=f@file.py:3`) by
    whether a user frame of the run has that file name."""
    if "/" in file or "\\" in file:
        return not is_library_path(file)
    return PurePath(file).name in user_names and not file.startswith("<")


def split_lines(lines: Iterable[str], user_names: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    user: list[str] = []
    library: list[str] = []
    for loc in lines:
        file = loc.rsplit(":", 1)[0] if loc.rsplit(":", 1)[-1].isdigit() else loc
        bucket = user if _is_user_file(file, user_names) else library
        if loc not in bucket:
            bucket.append(loc)
    return tuple(user), tuple(library)


# Library code the user calls by a name of their own: which call in their script reached it.
_CALLS = (
    ("clip_grad", ("clip_grad_norm_(", "clip_grad_value_(", "clip_grad")),
    ("_patched_functions", ("clip_grad_norm_(",)),  # torch_xla's own clip_grad_norm_
    ("/optim/", (".step(",)),
    ("dropout", (".train(", ".eval(")),
)


_MAX_SCRIPT_LINES = 5000


def calling_lines(library_lines: tuple[str, ...], site: str, read_line: LineReader) -> tuple[str, ...]:
    """The lines of the user's script (the sync's file) that call the library code a cause's
    instructions come from: `clip_grad_norm_(...)` for clip_grad.py, `opt.step()` for an
    optimizer. Empty when the script has no such call."""
    file = site.rpartition(":")[0]
    # The library line's own text names the op where its file does not (`F.dropout` in functional.py).
    said = [lib + " " + read_line(*split_location(lib)) for lib in library_lines]
    tokens = [t for marker, names in _CALLS if any(marker in text for text in said) for t in names]
    # A function of torch's functional API the user calls by name (`F.interpolate(...)`).
    tokens += [f"{name}(" for lib in library_lines if (name := _functional_name(lib, read_line))]
    if not file or not tokens:
        return ()
    found: list[str] = []
    in_string = False
    for n in range(1, _MAX_SCRIPT_LINES):
        text = read_line(file, n)
        if not text:
            break
        quotes = text.count('"""') + text.count("'''")
        if in_string or quotes:  # docstrings talk about calls; only code makes them
            in_string = in_string != (quotes % 2 == 1)
            continue
        code = text.split("#", 1)[0]
        if any(t in code for t in tokens):
            found.append(f"{file}:{n}")
    return tuple(found[:3])


_FUNCTIONAL = ("torch/nn/functional.py", "torch/functional.py")


_DEF_LINE = re.compile(r"^def ([a-z]\w*)\(")


def _functional_name(library_line: str, read_line: LineReader) -> str:
    """The public function of torch's functional API a library line is in (`interpolate`), or ""."""
    file, line = split_location(library_line)
    if not file.replace("\\", "/").endswith(_FUNCTIONAL):
        return ""
    for n in range(line, max(0, line - 400), -1):
        m = _DEF_LINE.match(read_line(file, n))
        if m:
            return m.group(1)
    return ""
