"""Which Python frames are the user's: the line a cause cites is the first frame of user code.

A frame is a library frame when its file lies in an installed package or the standard library
(`site-packages`, `dist-packages`, `.../lib/pythonX.Y/`), inside torch / torch_xla / transformers /
jax source trees (recognised by their own subpackages, so a user folder that happens to be called
`torch_xla` is not taken for the library), or is not a real file (`<frozen ...>`, `<string>`):
`xlagraph.source_paths.is_library_path`, which reads both a machine's absolute paths and the
portable relative ones (`torch/optim/sgd.py`).

Source text comes from the capture being analysed (`reading_sources`: its stored sources), never
from the analysing machine's installed packages: a library file is never opened. Without stored
sources (a raw dump, an older capture) only the user's own files are read, at their path relative
to the working directory or to the folders the analysis names (the dump's).
"""

from __future__ import annotations

import linecache
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from xlagraph.ir import Frame
from xlagraph.source_paths import (
    is_installed_path,
    is_library_path,
    library_generation,
    library_scope,
    portable_path,
)

__all__ = [
    "SourceText",
    "call_site",
    "current_sources",
    "first_user_frame",
    "is_library",
    "is_user_location",
    "location",
    "reading_sources",
    "source_line",
    "source_lines",
    "sources_key",
    "split_frames",
    "split_location",
    "user_frames",
]

# A source file larger than this is no Python source a user wrote: it is not read.
_MAX_SOURCE_BYTES = 16 << 20


class StoredText(Protocol):
    """A capture's stored sources (`xlagraph.capture.stored_sources.StoredSources`)."""

    @property
    def key(self) -> tuple[str, ...]:
        """The same for the same text, different for other text (the folders it is read from)."""
        ...

    def knows(self, path: str) -> bool: ...

    def line(self, path: str, n: int) -> str: ...


@dataclass(frozen=True)
class SourceText:
    """Where the analysis reads source text: `stored` (a capture's sources; when present, the only
    place: the files as they were when the capture ran) or else the user's files under `bases`
    (besides the working directory)."""

    stored: StoredText | None = None
    bases: tuple[str, ...] = ()


_NONE = SourceText()
_ACTIVE: ContextVar[SourceText | None] = ContextVar("xlagraph_source_text", default=None)


@contextmanager
def reading_sources(text: SourceText) -> Iterator[None]:
    """Source lines within the block come from `text`."""
    token = _ACTIVE.set(text)
    try:  # (the library marks of the captures read, and of no other: `source_paths.mark_library`)
        with library_scope(text.stored.key if text.stored is not None else ()):
            yield
    finally:
        _ACTIVE.reset(token)


def current_sources() -> SourceText | None:
    """The `SourceText` of the innermost `reading_sources` block (None outside any): a worker
    process re-enters it."""
    return _ACTIVE.get()


def sources_key() -> tuple[object, ...]:
    """Which text `source_line` reads now: a cache of what a file's text says (which `if` holds a
    line) keys on it too, or one capture's answer (or a diff's without sources: none) is given for
    another's. Without stored sources, the files under the bases and the working directory, and
    the library paths never read."""
    text = _ACTIVE.get() or _NONE
    if text.stored is not None:
        return ("stored", *text.stored.key)
    return ("files", *text.bases, os.getcwd(), library_generation())


def is_library(frame: Frame) -> bool:
    return is_library_path(frame.file)


def is_user_location(location: str) -> bool:
    """`file:line` (or a bare file) lies in the user's code, not in a library's."""
    return not is_library_path(location.rpartition(":")[0])


def is_optimizer_code(path: str) -> bool:
    """A file (or `file:line`) of an optimizer's code (`torch/optim/adam.py`, a package's
    `.../optim/...`): where an update's ops come from."""
    return "/optim/" in path.replace("\\", "/")


def location(frame: Frame) -> str:
    """`file:line`, the file in its portable form (a frame built from a machine's absolute path
    reads as one a capture recorded)."""
    file = portable_path(frame.file)
    return f"{file}:{frame.line}" if frame.line else file


def split_location(location: str) -> tuple[str, int]:
    """`file:line` as (file, line); a location without a line number is (location, 0)."""
    file, _, line = location.rpartition(":")
    return (file, int(line)) if line.isdigit() else (location, 0)


def user_frames(frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """The user's frames, innermost first."""
    return _user_frames(tuple(frames), library_generation())


@lru_cache(maxsize=16384)  # the ranks of a pod record the same stacks
def _user_frames(frames: tuple[Frame, ...], _generation: tuple[object, ...]) -> tuple[Frame, ...]:
    return tuple(f for f in frames if not is_library(f))


def split_frames(frames: tuple[Frame, ...]) -> tuple[tuple[Frame, ...], tuple[Frame, ...]]:
    """(user frames, library frames), each innermost first: the report shows the user's first and
    folds the library's."""
    return _split_frames(tuple(frames), library_generation())


@lru_cache(maxsize=16384)
def _split_frames(
    frames: tuple[Frame, ...], generation: tuple[object, ...]
) -> tuple[tuple[Frame, ...], tuple[Frame, ...]]:
    return _user_frames(frames, generation), tuple(f for f in frames if is_library(f))


def call_site(frames: tuple[Frame, ...]) -> str:
    """`file:line` of the innermost user frame (the innermost frame when all are library), or ``."""
    users = user_frames(frames)
    if users:
        return location(users[0])
    return location(frames[0]) if frames else ""


def first_user_frame(frames: tuple[Frame, ...]) -> tuple[Frame | None, Frame | None]:
    """(the innermost user frame, the library frame it called into), innermost first.

    `clip_grad_norm_` called from `train.py:40`: (train.py:40, clip_grad.py:...). A stack of
    library frames only gives (None, its innermost frame).
    """
    library: Frame | None = None
    for f in frames:
        if is_library(f):
            library = f if library is None else library
            continue
        return f, library
    return None, library


@lru_cache(maxsize=4096)
def _readable(file: str) -> bool:
    """A regular file of sane size: a dump's metadata may name a FIFO, a device or anything else,
    which `linecache` would block on or read without end."""
    try:
        st = os.stat(file)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= _MAX_SOURCE_BYTES


def source_line(file: str, line: int) -> str:
    """Line `line` of the source file `file` named by a frame, `` when it cannot be read safely:
    from the capture's stored sources, or a user's file (never a library's) on disk."""
    if line <= 0 or not file or file.startswith("<"):
        return ""
    text = _ACTIVE.get() or _NONE
    path = portable_path(file)
    if text.stored is not None:
        return text.stored.line(path, line)
    if is_library_path(path):
        return ""
    for candidate in _candidates(path, text.bases):
        if _readable(candidate) and not is_installed_path(candidate):
            return linecache.getline(candidate, line)
    return ""


def source_lines(file: str, limit: int) -> Iterator[tuple[int, str]]:
    """(n, text) of `file`'s lines from the first, before line `limit`, up to the end (a blank
    line reads as "\n"; past the end, or a file that cannot be read, as "").

    `source_line` of each line in turn, with the file found once: where a line comes from does
    not depend on its number, and finding it (the portable path, the library and installed-path
    tests, the candidates) cost ~10 times the line's own read (a report's statement lookups read
    one user file ~400 times: 4% of its CPU)."""
    if limit <= 1 or not file or file.startswith("<"):
        return
    text = _ACTIVE.get() or _NONE
    path = portable_path(file)
    if text.stored is not None:
        stored = text.stored
        for n in range(1, limit):
            line = stored.line(path, n)
            if not line:
                return
            yield n, line
        return
    if is_library_path(path):
        return
    for candidate in _candidates(path, text.bases):
        if _readable(candidate) and not is_installed_path(candidate):
            # `linecache.getline` is this list's line n, "" past its end
            for n, line in enumerate(linecache.getlines(candidate)[: limit - 1], 1):
                if not line:
                    return
                yield n, line
            return


def _candidates(path: str, bases: tuple[str, ...]) -> Iterator[str]:
    yield path
    if not os.path.isabs(path):  # an absolute one: of the user's machine (this one, or nowhere)
        for base in bases:
            yield os.path.join(base, path)
