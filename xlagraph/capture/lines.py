"""Source lines for a graph compiled while they were off (XLAGRAPH_SOURCE_LINES=auto). Pure. This
module copies the `metadata={...}` of a later lowering with lines onto the compiled dump,
instruction by instruction, so the module the report reads is exactly the compiled one plus lines
(when capture lowers again, and what it can reach: docs/capture-settings.md, `auto`).

Instructions are paired in the entry computation by their canonical bottom-up hash (`h1`: opcode,
shape, attributes, operands; blind to names and parameter numbers). Where several instructions
share one hash (two layers' weight transposes), a pair of users already matched decides: the
operand in the same position. An instruction left ambiguous gets lines only when all its
candidates carry the same ones. Called computations keep their own metadata."""

from __future__ import annotations

import re
from collections import defaultdict

from xlagraph.canonical import CanonicalComputation, canonicalize
from xlagraph.parse.hlo import parse_hlo

__all__ = ["merge_lines"]

_DEF = re.compile(r"^\s*(?:ROOT\s+)?%?([^\s=]+)\s*=\s")


def merge_lines(compiled: str, lowered: str, compiled_name: str, lowered_name: str) -> tuple[str, int]:
    """The compiled module's text with the lowered module's metadata where instructions pair, and
    how many instructions got a source line. Raises InputError when either does not parse."""
    ours = canonicalize(parse_hlo(compiled, compiled_name)).entry
    theirs = canonicalize(parse_hlo(lowered, lowered_name)).entry
    pairs = _pair(ours, theirs)
    raw = _metadata_by_name(lowered, theirs.computation.name)
    chosen = {n: raw[m] for n, m in pairs.items() if "source_file=" in raw.get(m, "")}
    lines = compiled.split("\n")
    done = 0
    for i, name, start, end in _definitions(lines, ours.computation.name):
        text = chosen.get(name)
        if text is None:
            continue
        line = lines[i]
        lines[i] = f"{line[:start]}{text}{line[end:]}" if start >= 0 else f"{line.rstrip()}, {text}"
        done += 1
    return "\n".join(lines), done


def _pair(ours: CanonicalComputation, theirs: CanonicalComputation) -> dict[str, str]:
    by_hash: dict[int, list[str]] = defaultdict(list)
    for name in theirs.order:
        by_hash[theirs.h1[name]].append(name)
    pairs = {n: c[0] for n in ours.order if len(c := by_hash.get(ours.h1[n], ())) == 1}
    users: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for name in ours.order:
        for pos, operand in enumerate(ours.operands.get(name, ())):
            users[operand].append((name, pos))
    metadata = {n: theirs.instruction(n).metadata for n in theirs.order}
    for name in reversed(ours.order):  # users before operands
        if name in pairs:
            continue
        candidates = by_hash.get(ours.h1[name], [])
        for user, pos in users.get(name, ()):
            if user in pairs:
                operands = theirs.operands.get(pairs[user], ())
                if pos < len(operands) and operands[pos] in candidates:
                    pairs[name] = operands[pos]
                    break
        else:
            if candidates and len({metadata[c] for c in candidates}) == 1:
                pairs[name] = candidates[0]
    return pairs


def _definitions(lines: list[str], computation: str) -> list[tuple[int, str, int, int]]:
    """(line index, instruction name, start and end of its `metadata={...}`, -1 when none) of
    the instructions of `computation` (its body runs from its header to the closing brace)."""
    out = []
    inside = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not inside:
            inside = re.match(rf"(?:ENTRY\s+)?%?{re.escape(computation)}[\s(]", stripped) is not None
            continue
        if stripped == "}":
            break
        m = _DEF.match(line)
        if m is not None:
            start, end = _metadata_span(line)
            out.append((i, m.group(1), start, end))
    return out


def _metadata_by_name(text: str, computation: str) -> dict[str, str]:
    lines = text.split("\n")
    return {name: lines[i][s:e] for i, name, s, e in _definitions(lines, computation) if s >= 0}


def _metadata_span(line: str) -> tuple[int, int]:
    """Where `metadata={...}` is in an instruction line (quotes respected), or (-1, -1)."""
    start = line.find("metadata={")
    if start < 0:
        return -1, -1
    depth, quoted, i = 0, False, start + len("metadata=")
    while i < len(line):
        c = line[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return start, i + 1
        i += 1
    return -1, -1
