"""The Rust crate (rust/src/) is laid out as the pipeline: one folder per stage, each using only
the stages before it, and no file using another that uses it back. Read from the sources (no
build): each file's `crate::` and `super::` paths (in `use` trees and in code) name the files it
uses.

    families.rs  <  parse/  <  canon/  <  matching/  <  diagnose/  <  py/  <  lib.rs

A file may use its own stage and earlier ones; a later stage is a circle waiting to happen (the
canonical form reaching into the matcher, the matcher into the diagnosis). Files are also kept
small enough to read whole: past `MAX_LINES` only with a reason, below."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "rust" / "src"

# The stages in pipeline order, by the first part of a file's module path (lib.rs is the root).
STAGES = ("families", "parse", "canon", "matching", "diagnose", "py", "lib")

MAX_LINES = 400
# Files allowed past MAX_LINES, each with why it is one file (none now: issue 39 split the last,
# parse/parser.rs, into its productions).
LONG_FILES: dict[str, str] = {}


def _code(text: str) -> str:
    """`text` with comments, strings and char literals blanked (lifetimes are kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif (raw := re.match(r'b?r(#*)"', text[i:])) and (i == 0 or not _word(text[i - 1])):
            end = text.find('"' + raw.group(1), i + raw.end())
            i = n if end < 0 else end + 1 + len(raw.group(1))
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and (lit := re.match(r"'(\\.[^']*|[^\\'])'", text[i:])):
            i += lit.end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _use_paths(tree: str) -> list[str]:
    """The paths a `use` tree names: `a::{b, c::{d, e}}` -> a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    m = re.match(r"(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree]
    prefix, inner = m.groups()
    parts, depth, start = [], 0, 0
    for k, c in enumerate(inner):
        depth += {"{": 1, "}": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(inner[start:k])
            start = k + 1
    parts.append(inner[start:])
    return [prefix + p for part in parts if part for p in _use_paths(part)]


def _module(path: Path) -> tuple[str, ...]:
    """A file's module path: ("canon", "handle") for canon/handle.rs, () for lib.rs."""
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts == ("lib",):
        return ()
    return parts[:-1] if parts[-1] == "mod" else parts


def _top_module(name: str) -> bool:
    return (SRC / f"{name}.rs").is_file() or (SRC / name / "mod.rs").is_file()


def _files() -> dict[tuple[str, ...], Path]:
    return {_module(p): p for p in sorted(SRC.rglob("*.rs"))}


def _inline_modules(code: str) -> list[tuple[int, int]]:
    """Spans of `mod name { ... }` blocks (where `super` is the file itself)."""
    spans = []
    for m in re.finditer(r"\bmod\s+\w+\s*\{", code):
        depth, k = 1, m.end()
        while k < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[k], 0)
            k += 1
        spans.append((m.start(), k))
    return spans


def _references(path: Path) -> set[tuple[str, ...]]:
    """Module paths (below the crate root) that `path` names, as written."""
    me = _module(path)
    code = _code(path.read_text(encoding="utf-8"))
    inline = _inline_modules(code)
    found: list[tuple[int, str]] = []
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        found += [(m.start(), p) for p in _use_paths(m.group(1))]
    without_uses = re.sub(r"\buse\s+[^;]+;", lambda m: " " * len(m.group(0)), code)
    for m in re.finditer(r"(?<![\w:])(\$?crate|super)((?:::\w+)+)", without_uses):
        found.append((m.start(), m.group(1).lstrip("$") + m.group(2)))
    refs = set()
    for at, p in found:
        segments = [s for s in p.split("::") if s and s != "*"]
        if me == () and segments and _top_module(segments[0]):
            segments = ["crate", *segments]  # lib.rs names its modules without `crate::`
        if not segments or segments[0] not in ("crate", "super", "self"):
            continue  # std, pyo3, or a name brought into scope
        if segments[0] == "crate":
            target = segments[1:]
        elif segments[0] == "self":
            target = list(me) + segments[1:]
        else:
            # `super` is the parent module; inside an inline module of this file, the file's own
            base = list(me) if any(s <= at < e for s, e in inline) else list(me[:-1])
            supers = 0
            while segments and segments[0] == "super":
                segments, supers = segments[1:], supers + 1
            target = base[: len(base) - (supers - 1)] + segments
        refs.add(tuple(target))
    return refs


def _edges() -> dict[Path, set[Path]]:
    """File -> the files it names (each path resolved to the deepest module that is a file)."""
    files = _files()
    edges: dict[Path, set[Path]] = {}
    for path in files.values():
        targets = set()
        for ref in _references(path):
            for k in range(len(ref), -1, -1):
                if ref[:k] in files:
                    targets.add(files[ref[:k]])
                    break
        targets.discard(path)
        edges[path] = targets
    return edges


def _stage(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return parts[0]


def _rel(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


def test_every_file_is_in_a_stage() -> None:
    lost = [_rel(p) for p in sorted(SRC.rglob("*.rs")) if _stage(p) not in STAGES]
    assert not lost, f"files outside the stages {STAGES} (put each in its stage's folder): {lost}"


def test_stages_use_only_earlier_stages() -> None:
    rank = {stage: k for k, stage in enumerate(STAGES)}
    backwards = []
    for source, targets in _edges().items():
        for target in targets:
            # a file outside the stages is test_every_file_is_in_a_stage's to report
            if rank.get(_stage(target), -1) > rank.get(_stage(source), len(STAGES)):
                backwards.append(f"{_rel(source)} -> {_rel(target)}")
    assert not backwards, (
        f"a stage uses a later one (order {' < '.join(STAGES)}); move the shared piece down to the "
        f"stage that both use: {sorted(backwards)}"
    )


def test_no_circle_between_files() -> None:
    edges = _edges()
    # Tarjan's strongly connected components: any with two files or more is a circle.
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    circles: list[list[str]] = []

    def visit(v: Path) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(_rel(w))
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not circles, f"files that use each other (move what both need into a third): {circles}"


def test_files_are_short() -> None:
    lines = {_rel(p): len(p.read_text(encoding="utf-8").splitlines()) for p in SRC.rglob("*.rs")}
    long = {f: n for f, n in lines.items() if n > MAX_LINES and f not in LONG_FILES}
    assert not long, f"files past {MAX_LINES} lines (split them, or say why not in LONG_FILES): {long}"
    stale = {f for f in LONG_FILES if lines.get(f, 0) <= MAX_LINES}
    assert not stale, f"LONG_FILES entries that are gone or short now (remove them): {sorted(stale)}"


def test_the_reader_sees_the_references() -> None:
    """The extraction itself, on the shapes the crate writes."""
    assert _use_paths("crate::canon::{model::{Failure, R}, shape_text::strip_layout as s}") == [
        "crate::canon::model::Failure",
        "crate::canon::model::R",
        "crate::canon::shape_text::strip_layout",
    ]
    code = _code("let s = \"crate::x::y\"; // crate::z\nlet c = '\"'; fn f<'a>() { crate::w::v() }")
    assert "crate::x" not in code and "crate::z" not in code and "crate::w::v" in code
