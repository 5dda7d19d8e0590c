"""The source text a capture keeps, so that a report reads nothing of the analysing machine.

After each step that cites a file or line not cited before, and again at exit, capture stores in
`<process folder>/sources/` the source of every file that a recorded frame names, each under its
portable path (`torch/optim/sgd.py`: relative to the `sys.path` entry it was imported from; the
user's files relative to the working directory; `xlagraph.source_paths`). The folder's format,
its budget (`XLAGRAPH_SOURCES_MB`) and what a file past it keeps are docs/capture.md ("Sources").

`Relativizer` gives the capture side's portable path of an absolute one (and remembers the lines
cited); `store_sources` writes the folder; `StoredSources.load` reads it back.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import sysconfig
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from xlagraph.parse.shared import current as current_shared
from xlagraph.source_paths import is_library_path, mark_library, portable_path

__all__ = [
    "INDEX",
    "SOURCES_DIR",
    "Relativizer",
    "StoredSources",
    "budget_bytes",
    "portable_dumps",
    "portable_file",
    "portable_meta",
    "relativize_text",
    "store_sources",
]

SOURCES_DIR = "sources"
INDEX = "index.json"
FORMAT = 1
_DEFAULT_MB = 16
_MAX_FILE = 4 << 20  # one file larger than this is no source a frame cites usefully: lines only
_MAX_TEXT = 64 << 20  # a blob that inflates past this is refused (a corrupt or hostile capture)
# An absolute path to a Python file in a dump (HLO `source_file="..." source_line=N`, a frame
# `fn (/x/y.py:N)`, a FileNames row), with the line it cites when there is one.
_ABS_PY = re.compile(
    r'(?<![\w.~/\\-])(?P<path>(?:/|[A-Za-z]:[\\/])[^\s"\'()<>,:]*\.py)(?:"\s+source_line=(?P<a>\d+)|:(?P<b>\d+))?'
)


def budget_bytes(environ: Mapping[str, str] | None = None) -> int:
    """`XLAGRAPH_SOURCES_MB` (megabytes of source text per process), 16 unless set; 0 keeps only
    the cited lines."""
    value = (environ if environ is not None else os.environ).get("XLAGRAPH_SOURCES_MB", "")
    try:
        return max(0, int(float(value) * (1 << 20))) if value.strip() else _DEFAULT_MB << 20
    except (ValueError, OverflowError):  # not a number, or inf/nan
        return _DEFAULT_MB << 20


# xlagraph's own package: an editable install is on no `sys.path` root, and its frames are never
# the user's.
_OWN_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _roots() -> tuple[list[str], list[str]]:
    """(library roots, other import roots) of this interpreter, longest first."""
    paths = sysconfig.get_paths()
    lib = {paths.get(k, "") for k in ("purelib", "platlib", "stdlib", "platstdlib")}
    lib |= {p for p in sys.path if p and re.search(r"[/\\](?:site|dist)-packages$", p)}
    other = {p for p in sys.path if p and os.path.isabs(p)} - lib
    norm = lambda items: sorted({os.path.normpath(p) for p in items if p}, key=len, reverse=True)  # noqa: E731
    return norm(lib), norm(other)


@dataclass
class Relativizer:
    """The capturing process's portable paths: a library file relative to its import root, the
    user's files relative to the working directory, another `sys.path` entry's files relative to
    it. Remembers every path given (`original`) and every line cited (`cited`)."""

    cwd: str = field(default_factory=os.getcwd)
    library_roots: list[str] = field(default_factory=list)
    other_roots: list[str] = field(default_factory=list)
    original: dict[str, str] = field(default_factory=dict)  # portable path -> the absolute path read
    library: set[str] = field(default_factory=set)
    cited: dict[str, set[int]] = field(default_factory=dict)
    _memo: dict[str, str] = field(default_factory=dict)

    @classmethod
    def here(cls, cwd: str | None = None) -> Relativizer:
        lib, other = _roots()
        return cls(cwd=os.path.normpath(cwd or os.getcwd()), library_roots=lib, other_roots=other)

    def __call__(self, path: str, line: int = 0) -> str:
        rel = self._memo.get(path)
        if rel is None:
            rel = self._memo[path] = self._relative(path)
        if line > 0 and rel in self.original:
            self.cited.setdefault(rel, set()).add(line)
        return rel

    def _relative(self, path: str) -> str:
        if not path or path.startswith("<") or not os.path.isabs(path):
            return portable_path(path)
        for candidate in dict.fromkeys((os.path.normpath(path), os.path.realpath(path))):
            found = self._under(candidate)
            if found is not None:
                rel, lib = found
                self.original.setdefault(rel, candidate)
                if lib:
                    self.library.add(rel)
                return rel
        rel = portable_path(path)  # (a library root of another layout: stripped by its name)
        if os.path.isabs(rel):  # outside every root: never the machine's path, only the name
            rel = os.path.basename(rel)
        else:
            self.original.setdefault(rel, path)
            if is_library_path(rel):
                self.library.add(rel)
        return rel

    def _under(self, path: str) -> tuple[str, bool] | None:
        if path.startswith(_OWN_ROOT):  # xlagraph's own code (its capture touching a tensor)
            return "xlagraph/" + os.path.relpath(path, _OWN_ROOT).replace(os.sep, "/"), True
        for roots, lib in ((self.library_roots, True), ([self.cwd], False), (self.other_roots, None)):
            for root in roots:
                if path.startswith(root.rstrip(os.sep) + os.sep):
                    rel = os.path.relpath(path, root).replace(os.sep, "/")
                    return rel, (is_library_path(rel) if lib is None else lib)
        return None

    def frames(self, frames: Iterable[tuple[str, str, int]]) -> list[list[object]]:
        """JSON frames `[function, portable path, line]`."""
        return [[f[0], self(f[1], int(f[2])), int(f[2])] for f in frames]


def relativize_text(text: str, rel: Relativizer) -> str:
    """`text` (an HLO dump, a live-tensor report) with every absolute `.py` path in portable form;
    the lines it cites are remembered by `rel`."""

    def sub(m: re.Match[str]) -> str:
        line = int(m.group("a") or m.group("b") or 0)
        return m.group(0).replace(m.group("path"), rel(m.group("path"), line), 1)

    return _ABS_PY.sub(sub, text)


def store_sources(proc_dir: str, rel: Relativizer, budget: int) -> dict[str, object]:
    """Write `sources/` for every file `rel` saw; the index written (also returned)."""
    out = os.path.join(proc_dir, SOURCES_DIR)
    os.makedirs(out, exist_ok=True)
    files: dict[str, dict[str, object]] = {}
    lines: dict[str, dict[str, object]] = {}
    stored = 0
    # The user's files first: they are what the recognizers scan; then the libraries'.
    for path in sorted(rel.original, key=lambda p: (p in rel.library, p)):
        lib = path in rel.library
        data = _read(rel.original[path])
        if data is None:  # (unreadable: still said to be a library file or not, with no lines)
            lines[path] = {"lib": lib, "lines": {}}
            continue
        if stored + len(data) <= budget and len(data) <= _MAX_FILE and _is_text(data):
            name = hashlib.sha256(data).hexdigest() + ".z"
            blob = os.path.join(out, name)
            if not os.path.exists(blob):
                tmp = f"{blob}.{os.getpid()}.tmp"
                with open(tmp, "wb") as f:
                    f.write(zlib.compress(data, 9))
                os.replace(tmp, blob)
            stored += len(data)
            files[path] = {"blob": name, "lib": lib}
            continue
        text = data.decode("utf-8", errors="replace").split("\n")
        cited = sorted(n for n in rel.cited.get(path, ()) if 0 < n <= len(text))
        if cited:
            lines[path] = {"lib": lib, "lines": {str(n): text[n - 1] + "\n" for n in cited}}
    index = {"format": FORMAT, "budget_bytes": budget, "stored_bytes": stored, "files": files, "lines": lines}
    tmp = os.path.join(out, f"{INDEX}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(index, f, indent=0, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(out, INDEX))
    return index


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(_MAX_FILE * 4)
    except (OSError, ValueError):
        return None


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@dataclass(frozen=True)
class StoredSources:
    """A capture process's stored sources (`sources/` of its folder), read lazily."""

    folder: str
    files: Mapping[str, str]  # portable path -> blob file name
    lines: Mapping[str, Mapping[int, str]]  # portable path -> {line: text} (files past the budget)
    library: frozenset[str]

    @staticmethod
    def load(proc_dir: str) -> StoredSources | None:
        """The sources stored in a capture process folder, None when it has none (a capture made
        before sources were stored, a run killed before its first step). Malformed entries are
        skipped."""
        folder = os.path.join(os.fspath(proc_dir), SOURCES_DIR)
        return _load(folder) if os.path.isfile(os.path.join(folder, INDEX)) else None

    @property
    def key(self) -> tuple[str, ...]:
        return (self.folder,)  # (read once per folder: `_load`)

    def knows(self, path: str) -> bool:
        return path in self.files or path in self.lines

    def line(self, path: str, n: int) -> str:
        """Line `n` (1-based, with its newline) of the stored file `path`, "" when not stored."""
        blob = self.files.get(path)
        if blob is not None:
            path = os.path.join(self.folder, blob)
            shared = current_shared()  # the ranks of a pod store the same files
            text = shared.parsed("blob", path, _blob_lines) if shared else _blob_lines(path)
            return text[n - 1] if 0 < n <= len(text) else ""
        return self.lines.get(path, {}).get(n, "")


@lru_cache(maxsize=64)
def _load(folder: str) -> StoredSources | None:
    from xlagraph.parse.input_files import read_bytes  # (bounded read; no torch, no installed source)

    try:
        raw = json.loads(read_bytes(os.path.join(folder, INDEX)).decode("utf-8"))
    except Exception:  # (an unreadable index: the capture just has no stored sources)
        return None
    if not isinstance(raw, dict):
        return None
    files: dict[str, str] = {}
    lines: dict[str, dict[int, str]] = {}
    library: set[str] = set()
    for path, entry in (raw.get("files") or {}).items():
        blob = entry.get("blob") if isinstance(entry, dict) else None
        if isinstance(blob, str) and re.fullmatch(r"[0-9a-f]{64}\.z", blob):
            files[path] = blob
            if entry.get("lib"):
                library.add(path)
    for path, entry in (raw.get("lines") or {}).items():
        if isinstance(entry, dict) and isinstance(entry.get("lines"), dict):
            lines[path] = {int(k): str(v) for k, v in entry["lines"].items() if str(k).isdigit()}
            if entry.get("lib"):
                library.add(path)
    mark_library(library, folder)
    return StoredSources(folder, files, lines, frozenset(library))


@lru_cache(maxsize=256)
def _blob_lines(path: str) -> tuple[str, ...]:
    from xlagraph.parse.input_files import read_bytes

    try:
        z = zlib.decompressobj()
        data = z.decompress(read_bytes(path), _MAX_TEXT)
    except Exception:  # (a missing or corrupt blob: its lines are not known)
        return ()
    return tuple(data.decode("utf-8", errors="replace").splitlines(keepends=True))


# -- as each is kept, and at exit: the folder's own files in portable form ----------------------

TEXT_DIRS = ("hlo", "lines", "tensors")  # the capture's dumps: HLO metadata and reports name files
_ABS_TOKEN = re.compile(r"(?<![\w.~/\\-])(?:/|[A-Za-z]:[\\/])[^\s\"',;=]+")


def dump_files(proc_dir: str, skip: tuple[str, ...] = (".tmp",)) -> Iterator[str]:
    """The regular files of a process folder's dumps (TEXT_DIRS), in name order, but those whose
    names end in `skip` (a rewrite left by a failed exit)."""
    for sub in TEXT_DIRS:
        folder = os.path.join(proc_dir, sub)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if not name.endswith(skip) and os.path.isfile(path) and not os.path.islink(path):
                yield path


def portable_dumps(proc_dir: str, rel: Relativizer) -> None:
    """Rewrite the dumps of a process folder (torch_xla writes absolute paths) in portable form."""
    for path in dump_files(proc_dir):
        portable_file(path, rel)


def portable_file(path: str, rel: Relativizer) -> None:
    """One finished dump (a module XLA wrote, a report) rewritten in portable form, in place: done
    as each is kept, so that a run killed before its end leaves a portable folder too."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    new = relativize_text(text, rel)
    if new != text:
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(tmp, path)


def portable_meta(meta: dict[str, object], proc_dir: str, rel: Relativizer) -> dict[str, object]:
    """meta.json without the machine's paths: `cwd` becomes "." (every path is relative to it),
    paths into the process folder relative to it, script paths portable."""
    proc = os.path.normpath(os.path.abspath(proc_dir))
    parent = os.path.dirname(proc)

    def token(m: re.Match[str]) -> str:
        p = os.path.normpath(m.group(0))
        if p == proc or p.startswith(proc + os.sep):
            return os.path.relpath(p, proc).replace(os.sep, "/")
        if p.startswith(parent + os.sep):
            return os.path.relpath(p, proc).replace(os.sep, "/")
        return rel(m.group(0))

    def scrub(value: object) -> object:
        if isinstance(value, str):
            return _ABS_TOKEN.sub(token, value)
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        return value

    return {k: "." if k == "cwd" else scrub(v) for k, v in meta.items()}
