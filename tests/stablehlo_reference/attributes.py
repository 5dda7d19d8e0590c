"""What every operation's translation reads: its operands, types and attributes (`Parsed`,
from the pretty form or the generic `<{...}>`/`{...}` dictionaries alike), and the attribute
values as HLO prints them (`ints`, `braces`, `enum`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.stablehlo_reference.emit import Comp, Emitter, Value, attr_dict, refs_of
from tests.stablehlo_reference.mlir_types import TypeError_, dims_of, hlo_shape, split_types
from tests.stablehlo_reference.structure import Op, matching, split_top

__all__ = ["Attrs", "Parsed", "braces", "enum", "ints", "nested", "numbers", "one", "parse"]

_ENUM = re.compile(r"#stablehlo<\w+\s+(\w+)>")


class Attrs(dict[str, str]):
    """An operation's attributes, remembering which the translation read: the rest are carried
    into the instruction (ops.py), so that no attribute can differ unseen."""

    def __init__(self) -> None:
        super().__init__()
        self.used: set[str] = set()

    def get(self, key: str, default: str = "") -> str:  # type: ignore[override]
        self.used.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.used.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.used.add(str(key))
        return super().__contains__(key)

    def unread(self) -> dict[str, str]:
        return {k: v for k, v in self.items() if k not in self.used}


@dataclass
class Parsed:
    operands: list[str]
    ins: list[str]  # operand types as written (MLIR)
    outs: list[str]  # result shapes (HLO)
    attrs: Attrs
    body: str  # the text before the type signature


def parse(op: Op) -> Parsed:
    # An operation of no operands has only its type: `stablehlo.after_all : !stablehlo.token`.
    parts = split_top(" " + op.text, " : ")
    body, sig = (" : ".join(parts[:-1]), parts[-1]) if len(parts) > 1 else (op.text, "")
    sig = re.sub(r"\s+(cond|do)\s*\{\}|\s*\{\}$", "", sig).strip()
    count = sum(n for _, n in op.results)
    if "->" in sig and split_top(sig, "->")[0] != sig:
        left, right = split_top(sig, "->")[:2]
        ins, outs = split_types(left), split_types(right)
    else:
        ins = split_types(sig) if sig else []
        outs = ins if len(ins) == count and count > 1 else ins[-1:] * count
    attrs = Attrs()
    rest = body
    while True:  # `<{...}>` and `{...}` attribute dictionaries, at the operation's top level
        k = _top_brace(rest)
        if k < 0:
            break
        start = k - 1 if k > 0 and rest[k - 1] == "<" else k
        end = matching(rest, k)
        if end < 0:
            break
        attrs.update(attr_dict(rest[k : end + 1]))
        rest = rest[:start] + " " + rest[end + 1 + (start != k) :]
    for part in split_top(rest):
        if m := re.search(r"(?<![%\w.])([A-Za-z_][\w.]*)\s*=\s*(\S.*)$", part):
            attrs.setdefault(m.group(1), m.group(2).strip())
    return Parsed(refs_of(op), ins, [hlo_shape(t) for t in outs], attrs, body)


def _top_brace(s: str) -> int:
    depth, i = 0, 0
    while i < len(s):
        c = s[i]
        if c == '"':
            j = i + 1
            while j < len(s) and s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            i = j + 1
            continue
        if c == "{" and depth == 0:
            return i
        if c == "<" and depth == 0 and s.startswith("<{", i):  # the generic form's properties
            return i + 1
        if c in "([<":
            depth += 1
        elif c in ")]>" and not (c == ">" and s[i - 1] == "-"):
            depth -= 1
        i += 1
    return -1


def ints(value: str) -> list[int]:
    """The integers of `[1, 0]`, `array<i64: 1, 0>`, `dense<[1, 0]> : tensor<2xi64>`."""
    head, sep, kind = value.partition(" : ")
    # a dense array's type, or the generic form's typed integer (`dimension = 0 : i64`, not 0 and 64)
    v = head if value.startswith("dense") or (sep and re.fullmatch(r"[su]?i[0-9]+", kind)) else value
    v = re.sub(r"array<i\d+:?", "", v)
    return [int(x) for x in re.findall(r"-?\d+", v)]


def nested(value: str) -> list[list[int]]:
    """`dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>` -> [[0, 1], [2, 3]] (rows of a 2-D array)."""
    v = value.split(" : ")[0]
    shape = value.split(" : ")[1] if " : " in value else ""
    flat = ints(v.replace("dense<", "").rstrip(">"))
    dims = dims_of(hlo_shape(shape)) if shape else [1, len(flat)]
    if len(dims) != 2:
        raise TypeError_(f"expected a 2-D array, found {value}")
    if len(flat) == 1 and dims[0] * dims[1] != 1:
        flat = flat * (dims[0] * dims[1])
    return [flat[k * dims[1] : (k + 1) * dims[1]] for k in range(dims[0])]


def braces(xs: list[int]) -> str:
    return "{" + ",".join(str(x) for x in xs) + "}"


def enum(value: str) -> str:
    m = _ENUM.search(value)
    return m.group(1) if m else value.strip()


def one(
    em: Emitter,
    comp: Comp,
    op: Op,
    p: Parsed,
    opcode: str,
    attrs: list[str],
    operands: list[Value] | None = None,
) -> Value:
    ops = operands if operands is not None else [em.lookup(comp, r, op.line) for r in p.operands]
    if len(p.outs) == 1:
        return em.inst(comp, opcode, p.outs[0], ops, attrs, op.line, op.loc)
    value = em.inst(comp, opcode, "(" + ", ".join(p.outs) + ")", ops, attrs, op.line, op.loc)
    value.elements = list(p.outs)
    return value


def numbers(value: str) -> dict[str, str]:
    """`#stablehlo.scatter<a = [0], b = 1>` -> {"a": "[0]", "b": "1"} (dimension numbers)."""
    if "<" not in value:
        return {}
    return attr_dict("{" + value.split("<", 1)[1].rsplit(">", 1)[0] + "}")
