"""Reader for PyTorch/XLA's lazy IR text (`XLA_SAVE_TENSORS_FMT=text`, the default format), mapped
onto the same IR as HLO so that every later stage works unchanged (the mapping, and what the format
does not print: docs/reading.md, "Lazy IR text")."""

from __future__ import annotations

import re

from xlagraph.errors import ParseError
from xlagraph.ir import Computation, GraphInfo, Instruction, Metadata, Module

__all__ = ["LOSSY_NOTE", "parse_lazy_ir"]

LOSSY_NOTE = (
    "lazy IR text prints no constant values or slice bounds; "
    "dump with XLA_SAVE_TENSORS_FMT=hlo to see those changes"
)

_NODE = re.compile(r"\s*%([0-9]+)\s*=\s*(.+?)\s+([A-Za-z_][\w]*::[\w.]+|[A-Za-z_][\w.\-]*)\((.*)$")
_OPERAND = re.compile(r"%([0-9]+)(?:\.([0-9]+))?")
_LOCATION = re.compile(r"(?:(.*)@)?(.+):([0-9]{1,9})$")

_PARAMETER_OPS = frozenset({"xla::device_data"})


def _split_attributes(text: str) -> list[tuple[str, str]]:
    from xlagraph.parse.hlo import split_top_level

    out = []
    for part in split_top_level(text):
        if part:
            key, _, value = part.partition("=")
            out.append((key.strip(), value.strip()))
    return out


def parse_lazy_ir(text: str, path: str = "", *, first_line: int = 1, info: GraphInfo | None = None) -> Module:
    """Parse one `IR { ... }` block into a single-computation Module."""
    offset = first_line - 1
    instructions: list[Instruction] = []
    defined: set[str] = set()
    roots: dict[int, str] = {}
    parameters = 0
    opened = closed = False
    for lineno, raw in enumerate(text.split("\n"), 1):
        s = raw.strip()
        if not s:
            continue
        if not opened:
            if s != "IR {":
                raise ParseError(path, "not lazy IR text: expected `IR {`", lineno + offset)
            opened = True
            continue
        if s == "}":
            closed = True
            break
        m = _NODE.match(raw)
        if m is None:
            raise ParseError(path, f"expected `%N = shape op(operands)`, got {s[:60]!r}", lineno + offset)
        node, shape, opcode, rest = m.groups()
        depth, end = 1, -1
        for pos, c in enumerate(rest):
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    end = pos
                    break
        if end < 0:
            raise ParseError(path, f"unbalanced parentheses in {opcode}(...)", lineno + offset)
        operands = []
        for ref, index in _OPERAND.findall(rest[:end]):
            if ref not in defined:
                raise ParseError(path, f"%{node} uses undefined operand %{ref}", lineno + offset)
            if index:
                name = f"{ref}.{index}"
                if name not in defined:
                    instructions.append(
                        Instruction(
                            name,
                            "get-tuple-element",
                            "",
                            (ref,),
                            (("index", index),),
                            (),
                            "",
                            None,
                            False,
                            lineno + offset,
                        )
                    )
                    defined.add(name)
                operands.append(name)
            else:
                operands.append(ref)
        attributes = []
        metadata = None
        tail = rest[end + 1 :].strip().lstrip(",")
        for key, value in _split_attributes(tail) if tail else ():
            if key == "ROOT":
                if not (value.isascii() and value.isdigit() and len(value) < 10):
                    raise ParseError(path, f"ROOT={value[:20]} is not an output index", lineno + offset)
                roots[int(value)] = node
            elif key == "location":
                lm = _LOCATION.match(value)
                if lm:
                    metadata = Metadata(
                        op_type=opcode,
                        op_name=lm.group(1) or "",
                        source_file=lm.group(2),
                        source_line=int(lm.group(3)),
                    )
            elif key not in ("xla_shape", "scope"):
                attributes.append((key, value))
        payload = ""
        if opcode in _PARAMETER_OPS:
            payload = str(parameters)
            parameters += 1
            attributes.insert(0, ("ir_op", opcode))
            opcode = "parameter"
        instructions.append(
            Instruction(
                node,
                opcode,
                shape,
                tuple(operands),
                tuple(attributes),
                (),
                payload,
                metadata,
                False,
                lineno + offset,
            )
        )
        defined.add(node)
    if not opened:
        raise ParseError(path, "no `IR {` block found (empty input?)", first_line)
    if not closed:
        raise ParseError(path, "truncated: `IR {` block is not closed", offset + text.count("\n") + 1)
    if not instructions:
        raise ParseError(path, "the IR block has no nodes", first_line)
    ordered = [roots[k] for k in sorted(roots)]
    last = instructions[-1].line
    shapes = {i.name: i.shape for i in instructions}
    root_shape = "(" + ", ".join(shapes[r] for r in ordered) + ")"
    instructions.append(
        Instruction("ROOT", "tuple", root_shape, tuple(ordered), (), (), "", None, True, last)
    )
    entry = Computation("IR", tuple(instructions), True, first_line)
    return Module("IR", (entry,), (), "lazy-ir", path, info or GraphInfo(label=path))
