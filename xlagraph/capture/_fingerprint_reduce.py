"""One variadic reduce (four sums in one pass) as an XLA computation, written as an HloModuleProto
with no protobuf library: a reducer of four adds and an entry that reduces four operands over
every axis but the first (why: `xla_builder` builds single-operand reduces only; docs/divergence.md,
"Capture", with the measurements).

The field numbers are those of xla/service/hlo.proto and xla/xla_data.proto (protobuf field
numbers are not reused); instruction ids carry their computation's id in the high 32 bits and
names end in `.N`, as XLA writes them (its builder aborts the process on a name without one):
checked with torch_xla 2.9 (tests/test_fingerprints.py runs it against the committed fixtures)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["sum4"]

S64, F64, TUPLE = 5, 12, 13  # xla.PrimitiveType
_TYPES = ("s64", "s64", "s64", "f64")
_CACHE: dict[tuple[int, ...], Any] = {}


def sum4(ops: Sequence[Any]) -> list[Any]:
    """The sums over every axis but the first of four operands of one shape [g, ...] (three s64,
    then one f64), in one reduce: four [g] ops."""
    import torch_xla.core.xla_builder as xb

    dims = tuple(ops[0].shape().sizes)
    computation = _CACHE.get(dims)
    if computation is None:
        computation = _CACHE[dims] = xb.computation_from_module_proto("xlagraph_sum4", _module(list(dims)))
    call = xb.Op.call(computation, list(ops))
    return [call.get_tuple_element(i) for i in range(4)]


# -- the proto -------------------------------------------------------------------------------------


def _module(dims: list[int]) -> bytes:
    scalars = [_shape(S64 if t == "s64" else F64, []) for t in _TYPES]
    arrays = [_shape(S64 if t == "s64" else F64, dims) for t in _TYPES]
    result = _tuple([_shape(S64 if t == "s64" else F64, dims[:1]) for t in _TYPES])

    # the reducer: (a0..a3, b0..b3) -> (a0 + b0, ..., a3 + b3). An instruction's id is its
    # computation's id in the high 32 bits and its own number in the low ones, as XLA writes them.
    r = _ids(1)
    body = [_param(r(i + 1), f"p.{i + 1}", scalars[i % 4], i) for i in range(8)]
    body += [
        _instr(r(9 + i), f"add.{9 + i}", "add", scalars[i], operands=[r(1 + i), r(5 + i)]) for i in range(4)
    ]
    tuple_shape = _tuple(scalars)
    body.append(_instr(r(13), "tuple.13", "tuple", tuple_shape, operands=[r(9), r(10), r(11), r(12)]))
    reducer = _computation(1, "xlagraph_add4.1", body, [*scalars, *scalars], tuple_shape, root=r(13))

    e = _ids(2)
    entry = [_param(e(i + 1), f"x.{i + 1}", arrays[i], i) for i in range(4)]
    entry.append(
        _instr(e(5), "constant.5", "constant", scalars[0], literal=_bytes(1, scalars[0]) + _packed(5, [0]))
    )
    entry.append(
        _instr(
            e(6), "constant.6", "constant", scalars[3], literal=_bytes(1, scalars[3]) + _bytes(9, bytes(8))
        )
    )
    reduce = _instr(
        e(7),
        "reduce.7",
        "reduce",
        result,
        operands=[e(1), e(2), e(3), e(4), e(5), e(5), e(5), e(6)],
        dimensions=list(range(1, len(dims))),
        called=[1],
    )
    entry.append(reduce)
    main = _computation(2, "xlagraph_sum4.2", entry, arrays, result, root=e(7))
    program = _program_shape(arrays, result)
    return (
        _bytes(1, b"xlagraph_sum4")
        + _bytes(2, b"xlagraph_sum4.2")
        + _bytes(3, reducer)
        + _bytes(3, main)
        + _bytes(4, program)
        + _varint_field(6, 2)
    )


def _ids(cid: int) -> Any:
    return lambda n: cid << 32 | n


def _computation(
    cid: int, name: str, instrs: list[bytes], params: list[bytes], result: bytes, root: int
) -> bytes:
    out = _bytes(1, name.encode())
    for instr in instrs:
        out += _bytes(2, instr)
    return out + _bytes(4, _program_shape(params, result)) + _varint_field(5, cid) + _varint_field(6, root)


def _program_shape(params: list[bytes], result: bytes) -> bytes:
    out = b"".join(_bytes(1, p) for p in params) + _bytes(2, result)
    return out + b"".join(_bytes(3, f"p{i}".encode()) for i in range(len(params)))


def _param(iid: int, name: str, shape: bytes, number: int) -> bytes:
    return _instr(iid, name, "parameter", shape, parameter_number=number)


def _instr(
    iid: int,
    name: str,
    opcode: str,
    shape: bytes,
    operands: Sequence[int] = (),
    parameter_number: int = 0,
    literal: bytes = b"",
    dimensions: Sequence[int] = (),
    called: Sequence[int] = (),
) -> bytes:
    out = _bytes(1, name.encode()) + _bytes(2, opcode.encode()) + _bytes(3, shape)
    if literal:
        out += _bytes(8, literal)
    if parameter_number:
        out += _varint_field(9, parameter_number)
    if dimensions:
        out += _packed(14, dimensions)
    out += _varint_field(35, iid)
    if operands:
        out += _packed(36, operands)
    if called:
        out += _packed(38, called)
    return out


def _shape(element_type: int, dims: Sequence[int]) -> bytes:
    layout = (_packed(1, list(reversed(range(len(dims))))) if dims else b"") + _varint_field(16, 1)
    out = _varint_field(2, element_type)
    if dims:
        out += _packed(3, dims)
    out += _bytes(5, layout)
    if dims:
        out += _packed(6, [0] * len(dims))
    return out


def _tuple(shapes: list[bytes]) -> bytes:
    return _varint_field(2, TUPLE) + b"".join(_bytes(4, s) for s in shapes)


# -- protobuf wire format -------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _varint_field(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _packed(field: int, values: Sequence[int]) -> bytes:
    return _bytes(field, b"".join(_varint(v) for v in values))
