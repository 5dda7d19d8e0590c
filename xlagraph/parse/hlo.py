"""Reader for HLO text: a thin wrapper over the compiled reader `xlagraph._core` (rust/).

The compiled reader follows XLA's own grammar and strictness (xla/hlo/parser/hlo_parser.cc): what
it reads, the other versions' spellings it reads with a note (`Module.notes`,
rust/src/parse/notes.rs) and what it refuses, naming the line, are docs/reading.md. Nesting is
bounded and the reader runs on a thread of its own, so deep input cannot overflow a stack.

It builds the IR of xlagraph.ir directly: names without `%`, raw attribute text in printed order
(metadata apart), parsed metadata, and the FileNames/StackFrames tables as rows turned into frames
here; and the module's canonical form (`Module.core`, which `canonical.canonicalize` uses).
`summarize_hlo` reads and canonicalizes without building any Python IR.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from contextvars import ContextVar
from typing import NamedTuple

try:
    from xlagraph import _core
except ImportError as e:  # a checkout used without `pip install -e .`
    raise ImportError(
        "xlagraph's compiled HLO reader (xlagraph._core) is not built: run `pip install -e .` "
        "in the checkout (it needs cargo and rustc)"
    ) from e
from xlagraph._gc import paused_gc
from xlagraph.errors import ParseError
from xlagraph.ir import Computation, Frame, GraphInfo, Instruction, Metadata, Module, Written

# The canonical form's tables by name and `by_name` of the computations the core keeps a handle
# on are mappings over that handle (rust/src/canon/handle.rs), not dictionaries; so are the compiled
# matcher's pairs of two such computations (`Matching.left`, `.right`, `.matcher`).
Mapping.register(_core.CanonMap)
Mapping.register(_core.PairMap)
MutableMapping.register(_core.EditedPairs)

__all__ = [
    "HloSummary",
    "looks_like_hlo",
    "old_spelling_notes",
    "parse_hlo",
    "split_top_level",
    "summarize_hlo",
]

_SPECIAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[,{}\[\]()]')
_KV = re.compile(r"(\w+)=(-?\d+)")
_OPENERS = frozenset("{[(")
_CLOSERS = frozenset("}])")


def looks_like_hlo(text: str) -> bool:
    """True when the first meaningful line is an `HloModule` header or starts a computation
    printed alone (comments and a BOM skipped)."""
    head = re.sub(r"/\*.*?\*/", " ", text[:65536].lstrip("\ufeff"), flags=re.S)
    for line in head.splitlines()[:50]:
        s = line.strip()
        if s and not s.startswith("//"):
            return s.startswith("HloModule") or _COMPUTATION_ALONE.match(s) is not None
    return False


# A computation printed without its module (`HloComputation::ToString` of an entry computation,
# as logs and bug reports paste it: `ENTRY %main (...) -> ... {`, or `name {`): XLA's parser
# reads it as a module named after it, and so does the core.
_COMPUTATION_ALONE = re.compile(r"ENTRY\s|%?[\w.\-]+\s*\{$")


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside brackets and string literals (the attribute rule of hlo-text-format 1.5)."""
    if not any(c in text for c in "{[(\"'"):
        return [p.strip() for p in text.split(sep)]
    parts: list[str] = []
    depth = 0
    start = 0
    for m in _SPECIAL.finditer(text):
        c = text[m.start()]
        if c == sep and depth == 0:
            parts.append(text[start : m.start()].strip())
            start = m.end()
        elif c in _OPENERS:
            depth += 1
        elif c in _CLOSERS:
            depth -= 1
    parts.append(text[start:].strip())
    return parts


def _unquote(value: str) -> str:
    return bytes(value, "utf-8").decode("unicode_escape", errors="replace") if "\\" in value else value


def _frame_tables(rows: list[tuple[str, int, str]]) -> dict[int, tuple[Frame, ...]]:
    """Stacks by frame id from the FileNames / FunctionNames / FileLocations / StackFrames rows."""
    files = {i: _unquote(v) for t, i, v in rows if t == "FileNames"}
    functions = {i: _unquote(v) for t, i, v in rows if t == "FunctionNames"}
    locations: dict[int, Frame] = {}
    parents: dict[int, tuple[int, int]] = {}
    for table, i, body in rows:
        if table == "FileLocations":
            kv = {k: int(v) for k, v in _KV.findall(body)}
            locations[i] = Frame(
                functions.get(kv.get("function_name_id", 0), ""),
                files.get(kv.get("file_name_id", 0), ""),
                kv.get("line", 0),
            )
        elif table == "StackFrames":
            kv = {k: int(v) for k, v in _KV.findall(body)}
            parents[i] = (kv.get("file_location_id", 0), kv.get("parent_frame_id", 0))
    stacks: dict[int, tuple[Frame, ...]] = {}
    for frame_id in parents:
        chain: list[Frame] = []
        seen: set[int] = set()
        current = frame_id
        while current in parents and current not in seen:
            seen.add(current)
            location, parent = parents[current]
            if location in locations:
                chain.append(locations[location])
            current = parent
        stacks[frame_id] = tuple(chain)
    return stacks


# Set where another reader runs beside this one (a diff's second side): the compiled reader then
# builds the Python IR before canonicalizing, so that one side's IR, which holds the GIL, is built
# while the other side canonicalizes without it. Only the order of the work changes.
IR_FIRST: ContextVar[bool] = ContextVar("IR_FIRST", default=False)

# Set where the module read will be asked about a few instructions only (a diff of two graphs):
# the compiled reader then hands each computation's instructions over as a sequence that builds
# each `Instruction` when first asked for (`_core.Instructions`, rust/src/parse/lazy_instructions.rs), keeping
# the reader's records and the text until the module goes. Only when the objects are built changes.
LAZY_IR: ContextVar[bool] = ContextVar("LAZY_IR", default=False)


def parse_hlo(
    text: str,
    path: str = "",
    *,
    first_line: int = 1,
    info: GraphInfo | None = None,
    line_map: list[int] | None = None,
    fmt: str = "hlo",
) -> Module:
    """Parse one HLO module from text.

    `first_line` is the line of `text` within `path` so that errors point into multi-graph files.
    Raises `ParseError` naming `path:line` for anything XLA would refuse. `line_map` and `fmt`:
    the text was written by another reader (StableHLO, parse/stablehlo/), line k of it standing
    for line `line_map[k]` of the user's text.
    """
    with paused_gc():
        try:
            name, header, computations, rows, canonical, old, inlined, shardy = _core.parse_hlo(
                text, first_line - 1, Instruction, Metadata, IR_FIRST.get(), LAZY_IR.get(), line_map
            )
        except _core.HloSyntaxError as e:
            message, line = e.args
            raise ParseError(path, message, line) from None
        info = info or GraphInfo(label=path)
        frames = _frame_tables(rows) if rows else {}
        notes = old_spelling_notes(old, path or name)
        comps = _computations(computations, canonical)
        written = _written(shardy)
        # Calls XLA inlines (rust/src/canon/inline.rs): the module as written, and the program
        # XLA compiles, which carries the canonical form.
        program = None
        if inlined is not None:
            inlined_comps, canonical = inlined
            program_comps = _computations(inlined_comps, canonical)
            core = (program_comps, canonical)
            program = Module(name, program_comps, header, fmt, path, info, frames, core, notes, None, written)
        core = (comps, canonical)
        return Module(name, comps, header, fmt, path, info, frames, core, notes, program, written)


def _written(shardy: tuple) -> Written:
    """The reader's `written` (rust/src/canon/shardy.rs `Written`): the first instruction of a
    line with that canonical text says how it was written."""
    values, meshes = shardy
    if not meshes:
        return Written()
    return Written({(line, c): w for line, c, w in reversed(values)}, dict(meshes))


def _computations(computations: list, canonical: tuple | None) -> tuple[Computation, ...]:
    comps = tuple(Computation(n, ins, entry, line) for n, ins, entry, line in computations)
    if canonical is not None and len(canonical) == 3:
        for index, *_, handle in canonical[2]:
            if handle is not None:  # `by_name` answered by the handle (names are unique)
                comps[index].__dict__["by_name"] = handle.by_name()
    return comps


def old_spelling_notes(rows: tuple[tuple[str, int, int], ...], where: str) -> tuple[str, ...]:
    """One line per kind of spelling the compiled reader read although today's XLA refuses it
    (rust/src/parse/notes.rs): `file:line: note: ...`, the line being the first such place."""
    return tuple(
        f"{where}:{line}: note: {what}" + (f" ({n} places)" if n > 1 else "") for what, line, n in rows
    )


class HloSummary(NamedTuple):
    """What listing graphs needs of a module: `canonicalize(parse_hlo(text))` without the IR."""

    name: str
    instruction_count: int
    computation_count: int
    fingerprint: str
    order: str
    notes: tuple[str, ...] = ()


def summarize_hlo(
    text: str, path: str = "", *, first_line: int = 1, line_map: list[int] | None = None
) -> HloSummary:
    """The module's name, sizes, canonical fingerprint and order, read and canonicalized by the
    compiled core alone (no Python IR is built: a fraction of `parse_hlo`'s time and memory).

    Raises the `ParseError`s `parse_hlo` and `canonicalize` raise."""
    try:
        name, count, computations, canonical, old = _core.summarize_hlo(text, first_line - 1, line_map)
    except _core.HloSyntaxError as e:
        message, line = e.args
        raise ParseError(path, message, line) from None
    first, second = canonical
    if isinstance(second, int):  # (message, line): canonicalization refuses the module
        raise ParseError(path or name, first, second)
    return HloSummary(name, count, computations, first, second, old_spelling_notes(old, path or name))
