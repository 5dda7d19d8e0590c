"""Source file paths in the form that is the same on every machine. Pure; imports nothing of xlagraph.
The forms a capture writes and the import roots `portable_path` strips from older dumps' absolute
paths: docs/capture.md, "Paths: portable, never the capturing machine's".

Which relative paths are library files: torch, torch_xla, transformers and jax by their own
subpackages, the standard library by its package names, and every path that was made relative
by stripping a library root or that a capture's stored sources mark as library (`mark_library`:
the relative form alone no longer says `site-packages`), the latter while that capture is read."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, TypeVar

__all__ = [
    "add_capture_roots",
    "is_installed_path",
    "is_library_path",
    "library_scope",
    "mark_library",
    "portable_frames",
    "portable_path",
    "short_location",
    "short_locations_in",
    "split_library_root",
]

# An installed package or the standard library, on any machine: what follows is the import path.
_ROOT = re.compile(r"^(?:.*[/\\])?(?:site-packages|dist-packages|lib[/\\]python\d+(?:\.\d+)?(?:\.zip)?)[/\\]")
# A framework's source tree (a checkout on sys.path): the path from the package's own folder.
_FRAMEWORK = (
    r"torch_xla/(?:core|distributed|debug|utils|runtime|_internal|experimental|amp|_dynamo|_prims"
    r"|stablehlo|torch_xla\.py|runtime\.py|__init__\.py)"
    r"|torch/(?:nn|optim|autograd|utils|distributed|_dynamo|_inductor|_functorch|_refs|_prims|_decomp"
    r"|fx|amp|_tensor\.py|functional\.py|_ops\.py|__init__\.py)"
    r"|transformers/(?:models|modeling_|generation|pytorch_utils|activations|utils|integrations|trainer)"
    r"|jax/_src/|jaxlib/"
)
_FRAMEWORK_ABS = re.compile(rf"^.*?/(?=(?:{_FRAMEWORK}))")
_FRAMEWORK_REL = re.compile(rf"(?:^|/)(?:{_FRAMEWORK})")
# A portable path starts with its import name: these packages' files, whatever the subpackage.
_PACKAGES = frozenset(
    {"torch", "torch_xla", "transformers", "jax", "jaxlib", "numpy", "torchvision", "flax", "xlagraph"}
)
# Standard-library modules that show up in Python stacks, read as library at the top level of a
# relative path (`contextlib.py`); packages (`concurrent/futures/thread.py`) by any stdlib name.
_STDLIB_FILES = frozenset(
    {
        *("runpy", "contextlib", "threading", "functools", "abc", "typing", "weakref", "copy", "inspect"),
        *("traceback", "dataclasses", "enum", "warnings", "queue", "selectors", "subprocess", "socket"),
        *("codecs", "pdb", "bdb", "cProfile", "timeit", "code", "codeop", "contextvars", "operator"),
        *("copyreg", "pickle", "tempfile", "shutil"),
    }
)
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) - {"test", "this", "antigravity"}
# Single-file packages of site-packages that sit in user stacks: typing_extensions' `@deprecated`
# wraps torch_xla 2.9's `xm.mark_step` / `xm.xla_device`, so its wrapper frame is the innermost
# frame above torch_xla's (a capture relocates it to a bare `typing_extensions.py`).
_SITE_FILES = frozenset({"typing_extensions", "six"})
# xlagraph's capture modules as captures before 2026-11-26 wrote them from an editable install
# (the bare file name): its own code touching a tensor (the live-tensor report) is never the user's.
_OWN_CAPTURE_FILES = frozenset({"_tensors_report", "_holders", "_recorder", "_hook", "_dumps", "_journal"})

# Paths made relative by stripping a library root: library wherever they are read.
_known_library: set[str] = set()
# Paths a capture's stored sources mark as library, by the folder they are stored in
# (`mark_library`): they hold while that capture is read (`library_scope`), not for another
# capture (or a diff without sources) read later in the same process.
_marked: dict[str, frozenset[str]] = {}
# The stored-sources folders read now; None outside any `library_scope` (every capture's marks:
# a report rendered after its capture was read).
_SCOPE: ContextVar[tuple[str, ...] | None] = ContextVar("xlagraph_library_scope", default=None)
# Folders of a capturing machine that its paths are relative to (`add_capture_roots`), in the
# capture's order: its working directory, then its other `sys.path` entries, longest first.
_capture_roots: list[str] = []
F = TypeVar("F", bound=Any)


def _slashes(path: str) -> str:
    return path.replace("\\", "/")


@lru_cache(maxsize=65536)
def split_library_root(path: str) -> tuple[str, str] | None:
    """(import root, path under it) of an absolute path inside an installed package, the standard
    library or a framework source tree; None for anything else."""
    p = _slashes(path)
    if not p.startswith("/") and not re.match(r"^[A-Za-z]:/", p):
        return None
    m = _ROOT.match(p)
    if m is None:
        m = _FRAMEWORK_ABS.match(p)
    if m is None or m.end() >= len(p):
        return None
    return p[: m.end()], p[m.end() :]


def portable_path(path: str, cwd: str = "") -> str:
    """The machine-independent form of a recorded source path.

    Relative paths are kept (`./` dropped); `<frozen runpy>`-like names are kept; an absolute path
    in a library root loses the root (and is remembered as a library file); one under `cwd` (the
    capturing process's working directory, when known) or under this process's working directory
    becomes relative to it; anything else is left as it is (a dump's absolute path whose working
    directory is unknown)."""
    if not path or path.startswith("<"):
        return path
    p = _fixed(path, cwd)
    if p.startswith("/") or re.match(r"^[A-Za-z]:/", p):
        b = _slashes(os.getcwd()).rstrip("/") + "/"
        if p.startswith(b) and len(p) > len(b):
            return p[len(b) :]
    return p


def portable_frames(frames: tuple[F, ...]) -> tuple[F, ...]:
    """`frames` (Frame-like named tuples: function, file, line) with portable paths."""
    out = tuple(f._replace(file=portable_path(f.file)) for f in frames)
    return frames if out == frames else out


@lru_cache(maxsize=65536)
def _fixed(path: str, cwd: str) -> str:
    p = _slashes(path)
    if not p.startswith("/") and not re.match(r"^[A-Za-z]:/", p):
        return os.path.normpath(p).replace("\\", "/") if "./" in p or "//" in p else p
    lib = split_library_root(p)
    if lib is not None:
        _known_library.add(lib[1])
        return lib[1]
    for root in (cwd, *_capture_roots) if cwd else _capture_roots:
        b = _slashes(root).rstrip("/") + "/"
        if p.startswith(b) and len(p) > len(b):
            return p[len(b) :]
    return p


def add_capture_roots(roots: list[str]) -> None:
    """A capture's working directory and import roots, as its meta.json recorded them while the
    run lasted: the paths under them in a dump the capture never made portable (a run killed
    between XLA writing a module and the capture pairing it) are read relative to them, as the
    capture would have written them, wherever the capture is read."""
    absolute = [r for r in roots if r.startswith("/") or re.match(r"^[A-Za-z]:[/\\]", r)]
    new = [r for r in absolute if r not in _capture_roots]
    if new:
        _capture_roots.extend(new)
        _fixed.cache_clear()


def mark_library(paths: Iterable[str], folder: str) -> None:
    """The stored sources in `folder` say that these relative paths are library files."""
    _marked[folder] = _marked.get(folder, frozenset()) | frozenset(paths)


@contextmanager
def library_scope(folders: Iterable[str]) -> Iterator[None]:
    """Within the block only the marks of the stored sources in `folders` hold (none for text
    read without a capture's sources)."""
    token = _SCOPE.set(tuple(folders))
    try:
        yield
    finally:
        _SCOPE.reset(token)


# is_library_path's answers for each `library_generation` (a path added to `_known_library` or
# marked can turn a "no" into a "yes"; a report's diagnosis and its rendering read in other
# scopes): each with the marks that hold. A report of 1,024 ranks asks about the same frames
# millions of times.
_answers: dict[tuple[object, ...], tuple[frozenset[str], dict[str, bool]]] = {}
_GENERATIONS = 8


def library_generation() -> tuple[object, ...]:
    """Changes whenever `is_library_path` may answer differently (a path became library code, or
    another capture's marks hold)."""
    return (len(_known_library), sum(len(m) for m in _marked.values()), _SCOPE.get())


def _marks() -> frozenset[str]:
    scope = _SCOPE.get()
    keys = _marked if scope is None else [k for k in scope if k in _marked]
    return frozenset().union(*(_marked[k] for k in keys))


def is_library_path(path: str) -> bool:
    """Library code (an installed package, the standard library, a framework source tree) or not
    a real file (`<frozen ...>`, `<string>`), for an absolute path from any machine or a relative
    path as `portable_path` writes it."""
    generation = library_generation()
    known = _answers.get(generation)
    if known is None:
        if len(_answers) >= _GENERATIONS:
            _answers.clear()
        known = _answers[generation] = (_marks(), {})
    marks, answers = known
    answer = answers.get(path)
    if answer is None:
        answer = answers[path] = _is_library_path(path, marks)
    return answer


def _is_library_path(path: str, marks: frozenset[str]) -> bool:
    if not path or path.startswith("<"):
        return bool(path)
    p = _slashes(path)
    if split_library_root(p) is not None or p in _known_library or p in marks:
        return True
    if p.startswith("/"):
        return False
    if _FRAMEWORK_REL.search(p):
        return True
    head, sep, _ = p.partition("/")
    return (
        (head in _STDLIB or head in _PACKAGES)
        if sep
        else p.removesuffix(".py") in _STDLIB_FILES | _SITE_FILES | _OWN_CAPTURE_FILES
    )


def is_installed_path(path: str) -> bool:
    """An absolute path inside site-packages, dist-packages or a Python standard library folder:
    never read by the analysis (it is the analysing machine's copy, not the captured one)."""
    return _ROOT.match(_slashes(os.path.abspath(path))) is not None


# An absolute `file.py:N` inside prose (a cause's summary names the user's `if` line, say).
_IN_TEXT = re.compile(r"(?<![\w.])/[^\s:()`'\",;]+\.py(?::\d+)?")


def short_location(loc: str) -> str:
    """`/usr/lib/python3/site-packages/torch/x.py:3` -> `torch/x.py:3`; a path under the current
    directory relative to it; anything else as it is."""
    path, sep, line = loc.rpartition(":")
    if not sep or not line.isdigit():
        path, line = loc, ""
    path = portable_path(path)
    return f"{path}:{line}" if line else path


def short_locations_in(text: str) -> str:
    """Every absolute `path.py[:N]` in `text` shown as `short_location` shows it, so that a
    summary and the `at` line below it name a file the same way."""
    return _IN_TEXT.sub(lambda m: short_location(m.group(0)), text) if "/" in text else text
