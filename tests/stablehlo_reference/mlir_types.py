"""MLIR types and constants as HLO writes them: `tensor<4x8xf32>` -> `f32[4,8]`, `i1` -> `pred`,
`tuple<...>` -> `(...)`, `!stablehlo.token` -> `token[]`; `dense<...>` -> an HLO literal.

The element types are those xla/hlo/translate/mhlo_to_hlo/type_to_shape.cc maps; anything else
(dynamic or bounded dimensions, quantized types, encodings) is refused by name.
"""

from __future__ import annotations

import math
import re
import struct

from tests.stablehlo_reference.structure import split_top

__all__ = ["TypeError_", "element_count", "hlo_literal", "hlo_shape", "split_types"]

_ELEMENTS = {
    "i1": "pred",
    "i2": "s2",
    "i4": "s4",
    "i8": "s8",
    "i16": "s16",
    "i32": "s32",
    "i64": "s64",
    "si8": "s8",
    "si16": "s16",
    "si32": "s32",
    "si64": "s64",
    "ui2": "u2",
    "ui4": "u4",
    "ui8": "u8",
    "ui16": "u16",
    "ui32": "u32",
    "ui64": "u64",
    "f16": "f16",
    "bf16": "bf16",
    "f32": "f32",
    "f64": "f64",
    "complex<f32>": "c64",
    "complex<f64>": "c128",
    "f8E5M2": "f8e5m2",
    "f8E4M3FN": "f8e4m3fn",
    "f8E4M3B11FNUZ": "f8e4m3b11fnuz",
    "f8E5M2FNUZ": "f8e5m2fnuz",
    "f8E4M3FNUZ": "f8e4m3fnuz",
    "f8E4M3": "f8e4m3",
    "f8E3M4": "f8e3m4",
    "f4E2M1FN": "f4e2m1fn",
    "f8E8M0FNU": "f8e8m0fnu",
}
_TENSOR = re.compile(r"^tensor<((?:\d+x)*)([^,]+)>$")
# Raw bytes of one element, for `dense<"0x...">` and hex scalars: struct format, or a bit shift
# into an f32 (bf16).
_FLOAT_BITS = {"f16": ("<e", 2), "f32": ("<f", 4), "f64": ("<d", 8), "bf16": ("bf16", 2)}
_INT_BYTES = {"s8": 1, "s16": 2, "s32": 4, "s64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8, "pred": 1}
MAX_SPLAT = 1 << 22  # elements a splat constant may expand to in the HLO literal


class TypeError_(ValueError):
    """A type or constant this reader cannot write as HLO: the message names it."""


def split_types(text: str) -> list[str]:
    """`(a, b)` or `a, b` -> [a, b]; `()` -> []."""
    t = text.strip()
    if t.startswith("(") and t.endswith(")"):
        t = t[1:-1]
    return split_top(t)


def hlo_shape(mlir: str) -> str:
    """The HLO shape of an MLIR type."""
    t = mlir.strip()
    if t.startswith("tuple<") and t.endswith(">"):
        return "(" + ", ".join(hlo_shape(p) for p in split_top(t[6:-1])) + ")"
    if t in ("!stablehlo.token", "!mhlo.token"):
        return "token[]"
    # `tensor<?xf32>` would match _TENSOR with `?xf32` as its element type: named first.
    m = None if t.startswith("tensor<") and "?" in t else _TENSOR.match(t)
    if m is None:
        if t.startswith("tensor<") and ("?" in t or "," in t):
            raise TypeError_(f"type {t}: dynamic or bounded dimensions and encodings are not read")
        if t in _ELEMENTS:  # a scalar written without `tensor<>` (a block argument of some ops)
            return f"{_ELEMENTS[t]}[]"
        raise TypeError_(f"type {t} is not read")
    dims, element = m.group(1), m.group(2)
    if element not in _ELEMENTS:
        raise TypeError_(f"element type {element} is not read")
    sizes = [d for d in dims.split("x") if d]
    return f"{_ELEMENTS[element]}[{','.join(sizes)}]"


def dims_of(shape: str) -> list[int]:
    """[4, 8] of `f32[4,8]`."""
    inner = shape[shape.index("[") + 1 : shape.rindex("]")]
    return [int(d) for d in inner.split(",") if d]


def element_of(shape: str) -> str:
    return shape[: shape.index("[")]


def element_count(shape: str) -> int:
    return math.prod(dims_of(shape))


def hlo_literal(value: str, shape: str) -> str:
    """The HLO literal of `dense<...>` (`value` is what the brackets hold) for `shape`."""
    element = element_of(shape)
    dims = dims_of(shape)
    count = math.prod(dims)
    v = value.strip()
    if v.startswith('"0x'):
        flat = _from_bytes(bytes.fromhex(v[3:-1]), element, shape)
        if len(flat) == 1 and count != 1:  # a splat written as bytes
            flat = flat * count
    elif v.startswith("[") or (not v and count == 0):  # `dense<>`: a tensor of no elements
        flat = [_scalar(x, element) for x in _flatten(v)] if v else []
    else:
        if count > MAX_SPLAT:
            raise TypeError_(f"splat constant of {count} elements is over {MAX_SPLAT}")
        flat = [_scalar(v, element)] * (1 if not dims else count)
    if len(flat) != count:
        raise TypeError_(f"constant has {len(flat)} elements, its type {shape} {count}")
    if not dims:
        return str(flat[0])
    return _nest(flat, dims)


def _nest(flat: list[str], dims: list[int]) -> str:
    if len(dims) == 1:
        return "{" + ", ".join(str(x) for x in flat) + "}"
    step = math.prod(dims[1:])
    rows = [_nest(flat[k * step : (k + 1) * step], dims[1:]) for k in range(dims[0])]
    return "{ " + ", ".join(rows) + " }"


def _flatten(v: str) -> list[str]:
    out: list[str] = []
    for part in split_top(v[1:-1]):
        if part.startswith("["):
            out.extend(_flatten(part))
        elif part:
            out.append(part)
    return out


def _scalar(text: object, element: str) -> str:
    """One element as HLO prints it: `1` for 1.0, `-inf`, `nan`, `true`, `(1, 2)`."""
    t = str(text).strip()
    if element == "pred":
        if t in ("true", "false"):
            return t
        return "true" if int(t, 0) else "false"
    if element.startswith("c"):
        if not (t.startswith("(") and t.endswith(")")):
            raise TypeError_(f"complex constant {t} is not read")
        re_, im = split_top(t[1:-1])
        part = "f32" if element == "c64" else "f64"
        return f"({_scalar(re_, part)}, {_scalar(im, part)})"
    if element[0] in "su":
        return str(int(t, 0))
    f = _float_bits(int(t, 16), element) if t.startswith(("0x", "0X")) else float(t)
    return _float_text(f)


def _float_text(f: float) -> str:
    if math.isnan(f):
        return "nan" if math.copysign(1.0, f) > 0 else "-nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f.is_integer() and abs(f) < 1e16:
        return str(int(f)) if f != 0 or math.copysign(1.0, f) > 0 else "-0"
    return repr(f)


def _float_bits(bits: int, element: str) -> float:
    if element not in _FLOAT_BITS:
        raise TypeError_(f"hexadecimal {element} constants are not read")
    fmt, size = _FLOAT_BITS[element]
    if fmt == "bf16":
        return float(struct.unpack("<f", struct.pack("<I", bits << 16))[0])
    return float(struct.unpack(fmt, bits.to_bytes(size, "little"))[0])


def _from_bytes(data: bytes, element: str, shape: str) -> list[str]:
    if element in _FLOAT_BITS:
        size = _FLOAT_BITS[element][1]
        return [
            _float_text(_float_bits(int.from_bytes(data[k : k + size], "little"), element))
            for k in range(0, len(data), size)
        ]
    if element in _INT_BYTES:
        size = _INT_BYTES[element]
        signed = element[0] == "s"
        values = [
            int.from_bytes(data[k : k + size], "little", signed=signed) for k in range(0, len(data), size)
        ]
        return ["true" if v else "false" for v in values] if element == "pred" else [str(v) for v in values]
    raise TypeError_(f"constant of {shape} written as bytes is not read")
