"""Reader for HLO text in every printer variant XLA and PyTorch/XLA emit.

One line is one instruction in every real dump, so the reader is line based: a single regular
expression recognises `(ROOT )?%?name = shape opcode(` and the rest of the line is split with a
bracket-depth scanner that skips string literals. Lines that do not start a new instruction are
continuations of the previous one (hand-written text wraps long instructions). `%` sigils, operand
shapes and computation signatures are optional everywhere, as in XLA's own parser
(hlo-text-format.md 0 and 1.13).

Only what later stages need is kept: names, opcode, the result shape text, operand names, raw
attribute values and the parsed metadata. The reader checks what a diff relies on (every operand
and called computation is defined, the text is not truncated) and reports `file:line` otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from xlagraph._gc import paused_gc
from xlagraph.errors import ParseError
from xlagraph.ir import COMPUTATION_ATTRIBUTES, Computation, Frame, GraphInfo, Instruction, Metadata, Module

__all__ = ["looks_like_hlo", "parse_hlo", "split_top_level"]

# A shape never contains `=` once comments are gone, except in bounded dynamic dimensions
# (`s32[<=8,1]`), which keeps the lazy shape group from running past the first attribute.
# `_FAST` also captures an operand list without parentheses (all but tuple-typed operands and
# complex literals) so most lines need one match.
_INSTRUCTION = re.compile(
    r"\s*(ROOT\s+)?%?([A-Za-z_][\w.\-]*)\s*=\s*((?:[^=]|<=)+?)\s+([a-z][a-z0-9_\-]*)\((.*)$"
)
_FAST = re.compile(
    r'\s*(ROOT\s+)?%?([A-Za-z_][\w.\-]*)\s*=\s*([^=]+?)\s+([a-z][a-z0-9_\-]*)\(([^()"]*)\)(.*)$'
)
_STARTS_INSTRUCTION = re.compile(r"\s*(ROOT\s+)?%?[A-Za-z_][\w.\-]*\s*=")
_COMPUTATION = re.compile(r"\s*(ENTRY\s+)?%?([A-Za-z_][\w.\-]*)\s*(.*?)\{\s*$")
_HEADER = re.compile(r"\s*HloModule\s+%?([^\s,]+?):?(?:\s*,\s*(.*))?\s*$")
_OPERAND_NAME = re.compile(r"%([\w.\-]+)")
_BARE_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)")
_SPECIAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[,{}\[\]()]')
_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|/\*.*?\*/')
_METADATA_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s,}]+)')
_FRAME_TABLE = re.compile(r'\s*(\d+)\s+(?:"((?:[^"\\]|\\.)*)"|\{(.*)\})\s*$')
_KV = re.compile(r"(\w+)=(-?\d+)")

# Attribute tails without strings or nested brackets (most of them) are split by one regex.
_SIMPLE_TAIL = re.compile(
    r'(?:,\s*[\w.\-]+=(?:\{[^{}"\'()\[\]]*\}|\[[^\[\]"\'(){}]*\]|[^,{}\[\]"\'()]*))*\s*'
)
_SIMPLE_ATTR = re.compile(r'([\w.\-]+)=(\{[^{}"\'()\[\]]*\}|\[[^\[\]"\'(){}]*\]|[^,{}\[\]"\'()]*)')
_OPENERS = frozenset("{[(")
_CLOSERS = frozenset("}])")
_NOT_OPERANDS = frozenset({"parameter", "constant"})
_FRAME_TABLES = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})


def looks_like_hlo(text: str) -> bool:
    """True when the first meaningful line is an `HloModule` header."""
    for line in text.splitlines()[:50]:
        s = line.strip()
        if s and not s.startswith("//"):
            return s.startswith("HloModule")
    return False


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


def _strip_comments(line: str) -> str:
    return _COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else "", line)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return bytes(value[1:-1], "utf-8").decode("unicode_escape", errors="replace")
    return value


def parse_metadata(value: str) -> Metadata:
    """`{op_type="x" op_name="y" source_file="f.py" source_line=3}` -> Metadata."""
    fields = dict(_METADATA_FIELD.findall(value))
    line = fields.get("source_line", "0")
    frame = fields.get("stack_frame_id", "0")
    return Metadata(
        op_type=_unquote(fields.get("op_type", "")),
        op_name=_unquote(fields.get("op_name", "")),
        source_file=_unquote(fields.get("source_file", "")),
        source_line=int(line) if line.lstrip("-").isdigit() else 0,
        stack_frame_id=int(frame) if frame.isdigit() else 0,
    )


def _close_paren(rest: str) -> int:
    """Index of the `)` that closes an operand list whose `(` was just consumed, or -1."""
    first = rest.find(")")
    if first >= 0 and "(" not in rest[:first] and '"' not in rest[:first]:
        return first
    depth = 1
    for m in _SPECIAL.finditer(rest):
        c = rest[m.start()]
        if c in _OPENERS:
            depth += 1
        elif c in _CLOSERS:
            depth -= 1
            if depth == 0:
                return m.start()
    return -1


def _operand_names(text: str) -> tuple[str, ...]:
    if not text or text.isspace():
        return ()
    if "%" in text:
        if "[" not in text and "(" not in text:
            return tuple(text.replace("%", "").replace(" ", "").split(","))
        return tuple(_OPERAND_NAME.findall(text))
    # No sigils: short form (`add(x, y)`) or hand-written `add(f32[] x, f32[] y)`.
    names = []
    for part in split_top_level(text):
        token = part.rsplit(None, 1)[-1] if part else ""
        m = _BARE_NAME.fullmatch(token)
        if m is None:
            raise ValueError(f"cannot read operand {part!r}")
        names.append(m.group(1))
    return tuple(names)


def _called_names(value: str) -> tuple[str, ...]:
    return tuple(_BARE_NAME.findall(value.strip("{} ")))


def _parse_instruction(text: str, line: int) -> Instruction:
    m = _INSTRUCTION.match(text)
    if m is None:
        raise ValueError("expected `name = shape opcode(operands)`")
    return _from_match(m, line)


def _from_match(m: re.Match[str], line: int) -> Instruction:
    root, name, shape, opcode, rest = m.groups()
    end = _close_paren(rest)
    if end < 0:
        raise ValueError(f"unbalanced parentheses in {opcode}(...)")
    return _build(root, name, shape, opcode, rest[:end], rest[end + 1 :].strip(), line)


def _build(
    root: str | None, name: str, shape: str, opcode: str, inside: str, tail: str, line: int
) -> Instruction:
    if opcode in _NOT_OPERANDS:
        operands: tuple[str, ...] = ()
        payload = inside.strip()
    else:
        operands = _operand_names(inside)
        payload = ""
    attributes: list[tuple[str, str]] = []
    called: tuple[str, ...] = ()
    metadata = None
    if tail:
        if tail[0] != ",":
            raise ValueError(f"unexpected text after {opcode}(...): {tail[:40]!r}")
        if _SIMPLE_TAIL.fullmatch(tail):
            pairs = _SIMPLE_ATTR.findall(tail)
            for key, value in pairs:
                if key in COMPUTATION_ATTRIBUTES:
                    called += _called_names(value)
            return Instruction._make(
                (name, opcode, shape, operands, tuple(pairs), called, payload, None, root is not None, line)
            )
        for part in split_top_level(tail[1:]):
            key, eq, value = part.partition("=")
            if not eq:
                raise ValueError(f"attribute without value: {part[:40]!r}")
            key = key.strip()
            if key == "metadata":
                metadata = parse_metadata(value)
                continue
            if key in COMPUTATION_ATTRIBUTES:
                called += _called_names(value)
            attributes.append((key, value))
    return Instruction._make(
        (name, opcode, shape, operands, tuple(attributes), called, payload, metadata, root is not None, line)
    )


def _parse_frame_tables(rows: dict[str, list[tuple[int, str]]]) -> dict[int, tuple[Frame, ...]]:
    files = {i: _unquote(f'"{v}"') for i, v in rows.get("FileNames", [])}
    functions = {i: _unquote(f'"{v}"') for i, v in rows.get("FunctionNames", [])}
    locations: dict[int, Frame] = {}
    for i, body in rows.get("FileLocations", []):
        kv = {k: int(v) for k, v in _KV.findall(body)}
        locations[i] = Frame(
            functions.get(kv.get("function_name_id", 0), ""),
            files.get(kv.get("file_name_id", 0), ""),
            kv.get("line", 0),
        )
    parents: dict[int, tuple[int, int]] = {}
    for i, body in rows.get("StackFrames", []):
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


def _source_line(text: str, lineno: int) -> str:
    """Line `lineno` (1-based) of `text`; only used on the rare wrapped-instruction path."""
    return text.split("\n", lineno)[lineno - 1]


def _lines(text: str) -> Iterator[tuple[int, str]]:
    yield from enumerate(text.split("\n"), 1)


def parse_hlo(text: str, path: str = "", *, first_line: int = 1, info: GraphInfo | None = None) -> Module:
    """Parse one HLO module from text.

    `first_line` is the line of `text` within `path` so that errors point into multi-graph files.
    Raises `ParseError` naming `path:line` for anything malformed.
    """
    with paused_gc():
        return _parse_hlo(text, path, first_line, info)


def _parse_hlo(text: str, path: str, first_line: int, info: GraphInfo | None) -> Module:
    offset = first_line - 1
    module_name = ""
    header: tuple[tuple[str, str], ...] = ()
    computations: list[Computation] = []
    tables: dict[str, list[tuple[int, str]]] = {}
    table = ""
    comp_name = ""
    comp_entry = False
    comp_line = 0
    instructions: list[Instruction] = []
    pending = ""  # an instruction that does not parse yet: wrapped over lines, or malformed
    pending_line = 0
    pending_error = ""
    error_line = 0
    last_line = 0

    def fail(message: str, line: int) -> ParseError:
        return ParseError(path, message, line + offset)

    for lineno, raw in _lines(text):
        if comp_name and not pending and "/*" not in raw and "//" not in raw:
            fm = _FAST.match(raw)
            if fm is not None:
                root, name, shape, opcode, inside, tail = fm.groups()
                try:
                    instructions.append(
                        _build(root, name, shape, opcode, inside, tail.strip(), lineno + offset)
                    )
                    last_line = lineno
                    continue
                except ValueError:
                    pass  # read again below, as possibly wrapped
        if "/*" in raw or "//" in raw:
            raw = _strip_comments(raw)
            if "//" in raw:
                raw = re.sub(r'//(?=(?:[^"]*"[^"]*")*[^"]*$).*', "", raw)
        stripped = raw.strip()
        if not stripped:
            continue
        last_line = lineno
        if comp_name:
            if stripped[0] == "}":
                if pending:
                    raise fail(pending_error, error_line)
                if not instructions:
                    raise fail(f"computation {comp_name} has no instructions", lineno)
                computations.append(
                    Computation(comp_name, tuple(instructions), comp_entry, comp_line + offset)
                )
                comp_name = ""
                instructions = []
                continue
            im = _INSTRUCTION.match(raw)
            if im is not None:
                if pending:
                    raise fail(pending_error, error_line)
                try:
                    instructions.append(_from_match(im, lineno + offset))
                except ValueError as e:
                    # Possibly wrapped over several lines: keep reading until it parses.
                    pending, pending_line, pending_error, error_line = raw, lineno, str(e), lineno
            elif _STARTS_INSTRUCTION.match(raw):
                raise fail(f"malformed instruction {stripped[:60]!r}", lineno)
            elif pending or instructions:
                # A continuation line: read the instruction again with it appended.
                if not pending:
                    last = instructions.pop()
                    pending_line = last.line - offset
                    pending = _source_line(text, pending_line)
                pending += " " + stripped
                try:
                    instructions.append(_parse_instruction(pending, pending_line + offset))
                    pending = ""
                except ValueError:
                    pending_error = f"expected an instruction, got {stripped[:60]!r}"
                    error_line = lineno
            else:
                raise fail(f"expected an instruction, got {stripped[:60]!r}", lineno)
            continue
        if not module_name:
            m = _HEADER.match(raw)
            if m is None:
                raise fail("not HLO text: expected `HloModule <name>` first", lineno)
            module_name = m.group(1)
            if m.group(2):
                attrs = []
                for part in split_top_level(m.group(2)):
                    key, _, value = part.partition("=")
                    attrs.append((key.strip(), value.strip()))
                header = tuple(attrs)
            continue
        if stripped in _FRAME_TABLES:
            table = stripped
            tables[table] = []
            continue
        if table and stripped[0].isdigit():
            fm = _FRAME_TABLE.match(raw)
            if fm is None:
                raise fail(f"malformed {table} row", lineno)
            tables[table].append((int(fm.group(1)), fm.group(2) if fm.group(2) is not None else fm.group(3)))
            continue
        cm = _COMPUTATION.match(raw)
        if cm is None:
            raise fail(f"expected a computation, got {stripped[:60]!r}", lineno)
        table = ""
        comp_entry = cm.group(1) is not None
        comp_name = cm.group(2)
        comp_line = lineno
    if comp_name:
        raise fail(f"truncated: computation {comp_name} is not closed", last_line)
    if not module_name:
        raise ParseError(path, "no HloModule found (empty input?)", first_line)
    if not computations:
        raise fail(f"module {module_name} has no computations (truncated?)", last_line)
    module = Module(
        module_name,
        tuple(computations),
        header,
        "hlo",
        path,
        info or GraphInfo(label=path),
        _parse_frame_tables(tables) if tables else {},
    )
    _check_references(module)
    return module


def _check_references(module: Module) -> None:
    names = module.by_name
    for comp in module.computations:
        defined = comp.by_name
        if len(defined) != len(comp.instructions):
            seen: set[str] = set()
            for i in comp.instructions:
                if i.name in seen:
                    raise ParseError(module.path, f"{i.name} is defined twice in {comp.name}", i.line)
                seen.add(i.name)
        for i in comp.instructions:
            for o in i.operands:
                if o not in defined:
                    raise ParseError(module.path, f"{i.name} uses undefined operand {o}", i.line)
            for c in i.called:
                if c not in names:
                    raise ParseError(module.path, f"{i.name} calls undefined computation {c}", i.line)
