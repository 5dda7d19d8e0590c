"""StableHLO text (MLIR's printed form) split into its structure: the module, its functions, and
each function's operations with their regions, each operation as one flat line of text (its
regions taken out) and the line it starts on. What an operation's text means is ops.py's job.

The MLIR printer writes one operation per line and a region's body on lines of its own, closed by
a line that starts with `}` (mlir/lib/IR/AsmPrinter.cpp); this reader relies on that layout, which
every printer of StableHLO text (JAX's `Lowered.as_text()`, torch_xla's `XLA_SAVE_TENSORS_FMT=
stablehlo`, `mlir-opt`) keeps. Text that breaks it is refused, naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .statements import join_statements

__all__ = ["Func", "MlirModule", "Op", "Region", "StructureError", "matching", "read_structure", "split_top"]

_LOC_ALIAS = re.compile(r"^(#loc\d*)\s*=\s*(.*?)\s*$")
# MLIR's pretty debug form (torch_xla's XLA_SAVE_TENSORS_FMT=stablehlo): locations without
# `loc(...)`, written after the operation's type: `"aten__add"(#loc5)`, `[unknown]`, `#loc3`,
# `file.py:11:0`; a call site goes on over lines that start with `at`.
_PRETTY_LOC = re.compile(
    r'\s+("(?:[^"\\]|\\.)*"(?:\(.*\))?|\[unknown\]|#loc\d*|fused(?:<[^>]*>)?\[.*\]|[\w./<>-]+:\d+:\d+'
    r"|(?:#loc\d*|\S+)(?:\s+at\s+\S+)+)$"
)
_CALLSITE_LINE = re.compile(r"^\s+at\s")
_OTHER_ALIAS = re.compile(r"^[#!][\w.$-]+\s*=")
_MODULE = re.compile(r"^module(?:\s+@([\w.$-]+|\"[^\"]*\"))?(?:\s+attributes\s*(\{.*\}))?\s*\{\s*$")
_FUNC = re.compile(r"^func\.func\s+(?:(public|private|nested)\s+)?@([\w.$-]+|\"[^\"]*\")\s*\(")
_RESULTS = re.compile(r"^((?:%[\w.$-]+(?::\d+)?)(?:\s*,\s*%[\w.$-]+(?::\d+)?)*)\s*=\s*")
# Shardy's mesh, at module level: `sdy.mesh @mesh = <["x"=2]> {stablehlo.mesh = ...}` (JAX adds the
# dictionary, a restatement XLA's export drops).
_MESH = re.compile(r'^sdy\.mesh\s+@([\w.$-]+|"[^"]*")\s*=\s*(<.*?>)(?:\s*\{.*\})?\s*$')
# A structural operation in MLIR's generic form (`"builtin.module"() <{...}> ({`, `"func.func"() ...`):
# refused by name, the reader taking the custom form every printer writes by default.
_GENERIC = re.compile(r'^"([A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z0-9_.$]+)"[ \t]*\(')
_BLOCK = re.compile(r"^\^bb\d*(?:\((.*)\))?\s*:\s*$")
_CONTINUATIONS = ("cond {", "reducer(")  # pretty `while` and `reduce`: regions on the next line
_OPEN = "([{<"
_CLOSE = ")]}>"


class StructureError(Exception):
    """Text that is not StableHLO as the MLIR printer writes it: `(message, line)`."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message, line)
        self.message = message
        self.line = line


@dataclass
class Region:
    """A region's body: its block's arguments (`(name, type)`; a pretty `reduce` or `while`
    names them in the operation's own text, ops.py fills them in), its operations, and the text
    before its `{` (`cond`, `do`, `reducer(...)`)."""

    label: str
    args: list[tuple[str, str]]
    ops: list[Op]
    line: int


@dataclass
class Op:
    """One operation: its results (`(name, count)`: `%7:3` is three results), its name as
    written (`stablehlo.add`, `"stablehlo.case"`, `return`), its text after the name with regions
    removed and the trailing `loc(...)` apart, and its regions in order."""

    results: list[tuple[str, int]]
    name: str
    text: str
    loc: str
    regions: list[Region]
    line: int


@dataclass
class Func:
    name: str
    visibility: str
    signature: str  # the text between the name and the body's `{`: `(args) -> results`
    body: Region
    line: int
    loc: str = ""


@dataclass
class MlirModule:
    name: str
    attributes: str
    funcs: list[Func] = field(default_factory=list)
    locs: dict[str, str] = field(default_factory=dict)
    line: int = 0
    meshes: list[tuple[str, str, int]] = field(default_factory=list)  # Shardy's `(name, <...>, line)`


def _tokens(sep: str) -> re.Pattern[str]:
    """What bracket scanning stops at: strings (skipped whole), `sep`, `->` (an arrow, not a
    closing `>`) and brackets; everything else is jumped over by the regex engine."""
    got = _TOKENS.get(sep)
    if got is None:
        got = re.compile(r'"(?:[^"\\]|\\.)*"?|' + (re.escape(sep) + "|" if sep else "") + r"->|[\[\](){}<>]")
        _TOKENS[sep] = got
    return got


_TOKENS: dict[str, re.Pattern[str]] = {}


def matching(s: str, start: int) -> int:
    """Index of the bracket closing the one at `start`; -1 when the text ends first. Strings
    are skipped; `->` is an arrow, not a closing `>`."""
    depth = 0
    for m in _tokens("").finditer(s, start):
        c = m.group()
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return m.start()
    return -1


def _string_end(s: str, i: int) -> int:
    """The index after the string literal that starts at `i` (its end when unterminated)."""
    m = _tokens("").match(s, i)
    return m.end() if m else len(s)


def _depth(s: str) -> int:
    depth = 0
    for m in _tokens("").finditer(s):
        c = m.group()
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
    return depth


def split_top(s: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside brackets and strings; empty text gives no parts."""
    parts: list[str] = []
    depth, start = 0, 0
    for m in _tokens(sep).finditer(s):
        c = m.group()
        if c == sep and depth == 0:
            parts.append(s[start : m.start()].strip())
            start = m.end()
            continue
        if c[0] == '"' or c == "->":
            continue
        for ch in c:  # a bracket, or a separator met inside brackets (` {` holds one)
            if ch in _OPEN:
                depth += 1
            elif ch in _CLOSE:
                depth -= 1
    last = s[start:].strip()
    if last or parts:
        parts.append(last)
    return parts


def strip_loc(s: str) -> tuple[str, str]:
    """`text loc(...)` -> (`text`, `loc(...)`), and the pretty form's trailing location too;
    text without a trailing location is kept whole."""
    s = s.rstrip()
    m = _PRETTY_LOC.search(s)
    if m and not m.group(1).startswith("loc(") and _depth(s[: m.start()]) == 0:
        return s[: m.start()].rstrip(), m.group(1)
    if not s.endswith(")"):
        return s, ""
    k = s.rfind("loc(")
    while k >= 0:
        if (k == 0 or not (s[k - 1].isalnum() or s[k - 1] in "_.")) and matching(s, k + 3) == len(s) - 1:
            return s[:k].rstrip(), s[k:]
        k = s.rfind("loc(", 0, k)
    return s, ""


class _Lines:
    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.i = 0
        # A pretty call site's `at #locN` lines join the line before (left blank: lines keep
        # their numbers).
        for k in range(1, len(self.lines)):
            if _CALLSITE_LINE.match(self.lines[k]):
                j = k - 1
                while j > 0 and not self.lines[j].strip():
                    j -= 1
                self.lines[j] += " " + self.lines[k].strip()
                self.lines[k] = ""
        join_statements(self.lines)  # a statement over several lines joins its first

    def next_meaningful(self) -> tuple[str, int] | None:
        while self.i < len(self.lines):
            s = self.lines[self.i].strip()
            self.i += 1
            if s and not s.startswith("//"):
                return s, self.i
        return None

    def peek(self) -> str:
        k = self.i
        while k < len(self.lines):
            s = self.lines[k].strip()
            if s and not s.startswith("//"):
                return s
            k += 1
        return ""


def complete_loc(value: str) -> bool:
    """A location whole (`loc(...)`, or the pretty form without it): its strings closed and its
    parentheses balanced (a file cut inside the location table must not read as whole)."""
    depth, quoted, escaped = 0, False, False
    for ch in value:
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
    return not quoted and depth == 0


def read_structure(text: str) -> MlirModule:
    """The module's functions, operations and location aliases. Raises `StructureError`."""
    src = _Lines(text.lstrip("\ufeff"))
    module: MlirModule | None = None
    locs: dict[str, str] = {}
    while (got := src.next_meaningful()) is not None:
        s, line = got
        if m := _LOC_ALIAS.match(s):
            if not complete_loc(m.group(2)):
                raise StructureError(f"location alias {m.group(1)} cut short or malformed: {s[:60]}", line)
            locs[m.group(1)] = m.group(2)
            continue
        if _OTHER_ALIAS.match(s):
            continue  # attribute and type aliases JAX does not write; an op naming one is refused
        if module is not None:
            raise StructureError(f"text after the module's closing `}}`: {s[:60]}", line)
        s_code, _ = strip_loc(s)
        m = _MODULE.match(s_code)
        if m is None:
            if s.startswith("func.func"):  # a bare function: MLIR's implicit module
                src.i -= 1
                module = MlirModule("", "", line=line)
                _read_module_body(src, module, implicit=True)
                continue
            _refuse_generic(s, line)
            raise StructureError(f"expected `module` or `func.func`, found: {s[:60]}", line)
        name = (m.group(1) or "").strip('"')
        module = MlirModule(name, m.group(2) or "", line=line)
        _read_module_body(src, module, implicit=False)
    if module is None:
        raise StructureError("no `module` in the text", 1)
    if undefined := undefined_location(text.lstrip("\ufeff"), locs):
        name, line = undefined
        raise StructureError(f"location {name} is not defined (the location table cut short?)", line)
    module.locs = locs
    return module


_LOC_REF = re.compile(r"(?<=[(\[, \t\r\x0b\x0c])#loc\d*(?!\w)", re.ASCII)


def undefined_location(text: str, locs: dict[str, str]) -> tuple[str, int] | None:
    """The first `#locN` an operation or an alias refers to that the table does not define, and
    its line: MLIR refuses such a file, and one cut at a line of its location table reads whole."""
    if "#loc" not in text:
        return None
    for k, line in enumerate(text.split("\n"), 1):
        if "#loc" in line:
            for m in _LOC_REF.finditer(line):
                if m.group() not in locs:
                    return m.group(), k
    return None


def _refuse_generic(s: str, line: int) -> None:
    if m := _GENERIC.match(s):
        raise StructureError(
            f'{m.group(1)} in MLIR\'s generic form ("{m.group(1)}"(...)) is not read: print the module in '
            "its custom form (not --mlir-print-op-generic or print_generic_op_form=True)",
            line,
        )


def _read_module_body(src: _Lines, module: MlirModule, *, implicit: bool) -> None:
    while True:
        got = src.next_meaningful()
        if got is None:
            if implicit:
                return
            raise StructureError(
                "the text ends inside the module (truncated?): no closing `}`", len(src.lines)
            )
        s, line = got
        if s.startswith("}") and not implicit:
            return
        mesh = _MESH.match(strip_loc(s)[0])
        if mesh is not None:
            module.meshes.append((mesh.group(1).strip('"'), mesh.group(2), line))
            continue
        m = _FUNC.match(s)
        if m is None:
            if implicit and _LOC_ALIAS.match(s):
                src.i -= 1
                return
            _refuse_generic(s, line)
            word = s.split("(")[0].split()[0] if s.split() else s
            raise StructureError(f"`{word}` at module level is not read (only func.func and sdy.mesh)", line)
        code, _ = strip_loc(s)
        if not code.endswith("{"):
            raise StructureError(f"function @{m.group(2)} has no body on its line", line)
        name = m.group(2).strip('"')
        if first := next((f.line for f in module.funcs if f.name == name), 0):
            # MLIR refuses a symbol defined twice; FileCheck files joined by `// -----` hold several
            # `@main`s, read one part at a time (`-split-input-file`).
            raise StructureError(f"function @{name} is defined twice (first on line {first})", line)
        body = Region("", [], [], line)
        _read_region(src, body)
        closing = src.lines[src.i - 1].strip()
        _, loc = strip_loc(closing[1:])
        module.funcs.append(
            Func(
                m.group(2).strip('"'), m.group(1) or "public", code[m.end() - 1 : -1].strip(), body, line, loc
            )
        )


def _read_region(src: _Lines, region: Region) -> None:
    """Operations up to the line that closes the region (which is left consumed)."""
    first = True
    while True:
        got = src.next_meaningful()
        if got is None:
            raise StructureError("the text ends inside a region (truncated?): no closing `}`", len(src.lines))
        s, line = got
        if s.startswith("}"):
            return
        if first and (b := _BLOCK.match(s)):
            region.args = _block_args(b.group(1) or "", line)
            first = False
            continue
        if s.startswith("^"):
            raise StructureError("a region of several blocks is not read (no StableHLO op has one)", line)
        first = False
        region.ops.append(_read_op(src, s, line))


def _block_args(text: str, line: int) -> list[tuple[str, str]]:
    out = []
    for part in split_top(text):
        part, _ = strip_loc(part)
        name, sep, type_ = part.partition(":")
        if not sep or not name.strip().startswith("%"):
            raise StructureError(f"malformed block argument: {part[:60]}", line)
        out.append((name.strip(), type_.strip()))
    return out


def _read_op(src: _Lines, s: str, line: int) -> Op:
    results: list[tuple[str, int]] = []
    if m := _RESULTS.match(s):
        for r in m.group(1).split(","):
            name, _, count = r.strip().partition(":")
            results.append((name, int(count) if count else 1))
        s = s[m.end() :]
    if s.startswith('"'):
        end = _string_end(s, 0)
        name, rest = s[1 : end - 1], s[end:]
    else:
        k = 0
        while k < len(s) and (s[k].isalnum() or s[k] in "_.$"):
            k += 1
        name, rest = s[:k], s[k:]
    if not name:
        # A line that starts with `:`, `(` or `{` goes on with the operation above it.
        more = " (the rest of an operation written over several lines?)" if s[:1] in ":({" else ""
        raise StructureError(f"expected an operation, found: {s[:60]}{more}", line)
    pieces = [rest]
    regions: list[Region] = []
    while True:
        code, _ = strip_loc(pieces[-1])
        if _depth("".join(pieces)) > 0 and code.endswith("{"):
            # The region's text leaves the operation's: `{}` keeps the brackets balanced.
            label = code[:-1].strip()
            # A pretty reducer's `reducer(%a: T, %b: T)` defines its block's arguments (ops.py).
            pieces[-1] = ("" if label.startswith("reducer(") else code[:-1]) + "{}"
            region = Region(label, [], [], src.i)
            _read_region(src, region)
            regions.append(region)
            pieces.append(src.lines[src.i - 1].strip()[1:])  # what follows the closing `}`
            continue
        if _depth("".join(pieces)) == 0 and src.peek().startswith(_CONTINUATIONS):
            got = src.next_meaningful()
            assert got is not None
            pieces.append(" " + got[0])
            continue
        break
    text = "".join(pieces)
    if _depth(text) != 0:
        # Hand-written MLIR (openxla/stablehlo's interpreter tests) spreads an operation's
        # attributes or type over lines; a cut file ends inside one: both are refused here.
        raise StructureError(
            f"`{name}` is not closed on its line: an operation over several lines (no MLIR printer "
            "writes one so), or text cut short",
            line,
        )
    text, loc = strip_loc(text)
    return Op(results, name, text.strip(), loc, regions, line)
