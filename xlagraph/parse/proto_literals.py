"""`LiteralProto` values printed as XLA's printer prints them: the shortest `%g` that reads back
to the same value in the literal's own type (XLA's `RoundTripFpToString`), elements nested by
dimension, in row-major order whatever the literal's layout."""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Callable

from xlagraph.parse.proto_wire import Message

__all__ = ["float_text", "literal_text", "type_name"]

_TYPES = {
    1: "pred",
    2: "s8",
    3: "s16",
    4: "s32",
    5: "s64",
    6: "u8",
    7: "u16",
    8: "u32",
    9: "u64",
    10: "f16",
    11: "f32",
    12: "f64",
    13: "tuple",
    14: "opaque",
    15: "c64",
    16: "bf16",
    17: "token",
    18: "c128",
    19: "f8e5m2",
    20: "f8e4m3fn",
    21: "s4",
    22: "u4",
    23: "f8e4m3b11fnuz",
    24: "f8e5m2fnuz",
    25: "f8e4m3fnuz",
    26: "s2",
    27: "u2",
    28: "f8e4m3",
    29: "f8e3m4",
    30: "s1",
    31: "u1",
    32: "f4e2m1fn",
    33: "f8e8m0fnu",
    34: "buffer",
}

# Where each element type keeps its values in a LiteralProto (field number, how it is stored).
_STORAGE = {
    "pred": (2, "varint"),
    "s8": (15, "i8"),
    "u8": (3, "u8"),
    "s16": (17, "i16"),
    "u16": (16, "u16"),
    "s32": (4, "varint"),
    "s64": (5, "varint"),
    "u32": (6, "uvarint"),
    "u64": (7, "uvarint"),
    "f16": (11, "f16"),
    "bf16": (13, "bf16"),
    "f32": (8, "f32"),
    "f64": (9, "f64"),
    "c64": (12, "f32"),
    "c128": (18, "f64"),
    "s4": (21, "i8"),
    "u4": (22, "u8"),
    "s2": (26, "i8"),
    "u2": (27, "u8"),
    "s1": (30, "i8"),
    "u1": (31, "u8"),
    "f8e5m2": (19, "mini"),
    "f8e4m3fn": (20, "mini"),
    "f8e4m3b11fnuz": (23, "mini"),
    "f8e5m2fnuz": (24, "mini"),
    "f8e4m3fnuz": (25, "mini"),
    "f8e4m3": (28, "mini"),
    "f8e3m4": (29, "mini"),
    "f4e2m1fn": (32, "mini"),
    "f8e8m0fnu": (33, "mini"),
}
# XLA's `RoundTripFpToString`: f32 and f64 print `digits10` digits when that reads back to the
# same value, else `max_digits10`; the narrower types always print `max_digits10`.
_DIGITS = {"f32": (6, 9), "c64": (6, 9), "f64": (15, 17), "c128": (15, 17), "f16": (5, 5), "bf16": (4, 4)}


_NARROW = {"s4": 4, "u4": 4, "s2": 2, "u2": 2, "s1": 1, "u1": 1}


def type_name(element_type: int) -> str:
    return _TYPES.get(element_type, f"type{element_type}")


def _to_f32(x: float) -> float:
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _to_f16(x: float) -> float:
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _to_bf16(x: float) -> float:
    bits = struct.unpack("<I", struct.pack("<f", _to_f32(x)))[0]
    if math.isnan(x):
        return x
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


_ROUND = {"f16": _to_f16, "bf16": _to_bf16, "f32": _to_f32, "c64": _to_f32, "f64": float, "c128": float}


def float_text(value: float, kind: str, payload: int = 0) -> str:
    """`payload`: a NaN's mantissa bits when they are not the plain quiet NaN's (printed as XLA
    does, `nan(0x7f)`)."""
    if math.isnan(value):
        return ("-nan" if math.copysign(1.0, value) < 0 else "nan") + (f"(0x{payload:x})" if payload else "")
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    if kind in _DIGITS:
        short, full = _DIGITS[kind]
    elif kind in _MINIFLOATS:
        short = full = _MINIFLOATS[kind][3]
    else:
        short = full = 17
    text = f"{value:.{short}g}"  # C's %g, as absl::StrFormat writes it
    if short != full and _ROUND.get(kind, float)(float(text)) != value:
        text = f"{value:.{full}g}"
    return text


def _bits_value(bits: int, code: str) -> float:
    fmt = "<f" if code == "I" else "<d"
    return struct.unpack(fmt, struct.pack("<" + code, bits))[0]


def _bits_text(bits: int, mantissa_bits: int, value: float, kind: str) -> str:
    payload = 0
    if math.isnan(value):
        mantissa = bits & ((1 << mantissa_bits) - 1)
        if mantissa != 1 << (mantissa_bits - 1):  # not the quiet NaN without payload
            payload = mantissa
    return float_text(value, kind, payload)


def _fixed_bits(literal: Message, field: int, width: int) -> list[int]:
    out: list[int] = []
    for v in literal.fields.get(field, ()):
        if isinstance(v, int):
            out.append(v)
        else:
            data = literal.bytes_of(v)
            out.extend(
                int.from_bytes(data[i : i + width], "little") for i in range(0, len(data) - width + 1, width)
            )
    return out


# The 8- and 4-bit float types, one element per byte: (exponent bits, mantissa bits, bias,
# max_digits10, how they spell infinity and NaN).
_MINIFLOATS = {
    "f8e5m2": (5, 2, 15, 2, "ieee"),
    "f8e4m3": (4, 3, 7, 3, "ieee"),
    "f8e3m4": (3, 4, 3, 3, "ieee"),
    "f8e4m3fn": (4, 3, 7, 3, "fn"),
    "f8e4m3fnuz": (4, 3, 8, 3, "fnuz"),
    "f8e5m2fnuz": (5, 2, 16, 2, "fnuz"),
    "f8e4m3b11fnuz": (4, 3, 11, 3, "fnuz"),
    "f4e2m1fn": (2, 1, 1, 2, "finite"),
    "f8e8m0fnu": (8, 0, 127, 2, "e8m0"),
}


def _minifloat(byte: int, kind: str) -> str:
    ebits, mbits, bias, _, style = _MINIFLOATS[kind]
    width = 1 + ebits + mbits if style != "e8m0" else 8
    byte &= (1 << width) - 1
    if style == "e8m0":
        return "nan" if byte == 0xFF else float_text(2.0 ** (byte - bias), kind)
    sign = -1.0 if byte >> (ebits + mbits) & 1 else 1.0
    exponent = (byte >> mbits) & ((1 << ebits) - 1)
    mantissa = byte & ((1 << mbits) - 1)
    if style == "fnuz" and byte == 0x80:
        return "-nan"
    if style == "ieee" and exponent == (1 << ebits) - 1:
        if mantissa:
            return "-nan" if sign < 0 else "nan"
        return "-inf" if sign < 0 else "inf"
    if style == "fn" and exponent == (1 << ebits) - 1 and mantissa == (1 << mbits) - 1:
        return "-nan" if sign < 0 else "nan"
    if exponent == 0:
        value = sign * mantissa * 2.0 ** (1 - bias - mbits)
    else:
        value = sign * (1 + mantissa / (1 << mbits)) * 2.0 ** (exponent - bias)
    return float_text(value, kind)


def _decode(literal: Message, kind: str, count: int) -> list[str] | None:
    found = _STORAGE.get(kind)
    if found is None:
        return None
    field, how = found
    if how in ("varint", "uvarint"):
        values = literal.ints(field)
        if how == "uvarint":
            values = [v & 0xFFFFFFFFFFFFFFFF for v in values]
        if kind == "pred":  # scalars print true/false, arrays 0/1 (see literal_text)
            return ["1" if v else "0" for v in values]
        if kind == "s32":
            values = [((v + 2**31) % 2**32) - 2**31 for v in values]
        return [str(v) for v in values]
    raw = literal.raw(field)
    if how == "i8":
        bits = _NARROW.get(kind, 8)  # s4, s2, s1: one element a byte, sign-extended from its width
        return [str((b & ((1 << bits) - 1)) - ((b >> (bits - 1) & 1) << bits)) for b in raw]
    if how == "u8":
        bits = _NARROW.get(kind, 8)
        return [str(b & ((1 << bits) - 1)) for b in raw]
    if how in ("i16", "u16"):
        return [
            str(v)
            for v in struct.unpack(
                f"<{len(raw) // 2}{'h' if how == 'i16' else 'H'}", raw[: len(raw) // 2 * 2]
            )
        ]
    if how == "mini":
        return [_minifloat(b, kind) for b in raw]
    if how in ("f16", "bf16"):
        halves = struct.unpack(f"<{len(raw) // 2}H", raw[: len(raw) // 2 * 2])
        if how == "f16":
            return [_bits_text(h, 10, struct.unpack("<e", struct.pack("<H", h))[0], kind) for h in halves]
        return [_bits_text(h, 7, struct.unpack("<f", struct.pack("<I", h << 16))[0], kind) for h in halves]
    width, code, mantissa = (4, "I", 23) if how == "f32" else (8, "Q", 52)
    bits = _fixed_bits(literal, field, width)
    values = [_bits_text(b, mantissa, _bits_value(b, code), kind) for b in bits]
    if kind in ("c64", "c128"):
        return [f"({values[i]}, {values[i + 1]})" for i in range(0, len(values) - 1, 2)]
    return values


def literal_text(literal: Message, shape_text: Callable[[Message | None], str] | None = None) -> str:
    """A constant's literal; with `shape_text`, each tuple element after its shape, as a custom
    call's `literal=` prints it."""
    shape = literal.message(1)
    if shape is None:
        return ""
    element_type = shape.int(2)
    kind = type_name(element_type)
    if kind == "tuple":
        elements = literal.messages(10)
        if shape_text is None:
            return "( " + ", ".join(literal_text(t) for t in elements) + " )"
        return "( " + ", ".join(_with_shape(t, shape_text) for t in elements) + " )"
    dims = shape.ints(3)
    count = math.prod(dims)
    values = _decode(literal, kind, count)
    if values is None or len(values) != count:
        # A type whose storage this reader does not decode (the f8 and f4 types): compared by
        # a digest of its bytes, never taken as equal to another value.
        digest = hashlib.blake2b(bytes(literal.raw(_field_of(literal))), digest_size=8).hexdigest()
        return f'"bytes:{digest}"'
    layout = shape.message(5)
    order = layout.ints(1) if layout is not None else []
    if order and order != list(range(len(dims) - 1, -1, -1)):
        values = _row_major(values, dims, order)
    if not dims:
        if kind == "pred" and values:
            return "true" if values[0] == "1" else "false"
        return values[0] if values else ""
    return _nest(values, dims)


def _with_shape(literal: Message, shape_text: Callable[[Message | None], str]) -> str:
    shape = literal.message(1)
    if shape is not None and shape.int(2) == 13:
        return literal_text(literal, shape_text)
    return f"{shape_text(shape)} {literal_text(literal)}"


def _field_of(literal: Message) -> int:
    for number in sorted(literal.fields):
        if number not in (1, 10, 14):
            return number
    return 0


def _row_major(values: list[str], dims: list[int], minor_to_major: list[int]) -> list[str]:
    """Values stored in a layout's order, put in row-major (logical) order."""
    strides = [0] * len(dims)
    step = 1
    for d in minor_to_major:
        strides[d] = step
        step *= dims[d]
    out = []
    index = [0] * len(dims)
    for _ in range(len(values)):
        out.append(values[sum(i * s for i, s in zip(index, strides, strict=True))])
        for d in range(len(dims) - 1, -1, -1):
            index[d] += 1
            if index[d] < dims[d]:
                break
            index[d] = 0
    return out


def _nest(values: list[str], dims: list[int]) -> str:
    if len(dims) == 1:
        return "{" + ", ".join(values) + "}"
    inner = math.prod(dims[1:])
    return "{" + ", ".join(_nest(values[i * inner : (i + 1) * inner], dims[1:]) for i in range(dims[0])) + "}"
