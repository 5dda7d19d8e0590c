"""Fingerprints on an XLA device as ONE user computation: every tensor of a step goes in as a
parameter, the (N, 5) int64 table comes out.

Why: traced as torch ops, a fingerprint costs ~6 lazy ops per tensor (reshape, concatenation,
bit cast, products, masks, per-tensor sums, norms), ~3 ms of tracing a step for 49 tensors on
the user's thread. Here the step traces one node (`_xla_user_computation`) whatever the number
of tensors; the computation is built once per set of shapes with `torch_xla.core.xla_builder`
and cached, so the graph torch_xla compiles (and caches) is the same every step.

Per tensor, the same fields as `_fingerprints.fingerprint` (see there): the bit pattern
(BitcastConvert, sign-extended to s64; integers converted, booleans 0/1), its s64 sum and its
sum weighted by the 1-based position (iota), NaN (x != x) and Inf (|x| == inf) counts, and the
f32 bits of the L2 norm (f64 tensors in f64, the rest in f32). Integer sums wrap modulo 2**64
as torch's int64 do, in any order XLA reduces them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["fingerprint_xla"]

OP_NAME = "xla::_op_xlagraph_fingerprint"
_MAX_CACHED = 64
_CACHE: dict[tuple[Any, ...], Any] = {}  # (dtype, shape) per tensor -> XLA computation
built = 0  # computations built so far: a new one is a new graph for torch_xla to compile
_BITS = {"f64": "s64", "f32": "s32", "bf16": "s16", "f16": "s16"}


def fingerprint_xla(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """(len(tensors), 5) int64 on the tensors' XLA device, rows in the order given; lazy."""
    import torch_xla

    global built
    key = tuple([(t.dtype, t.shape) for t in tensors])
    computation = _CACHE.get(key)
    if computation is None:
        if len(_CACHE) >= _MAX_CACHED:
            _CACHE.clear()
        computation = _CACHE[key] = _build(tensors)
        built += 1
    (table,) = torch_xla._XLAC._xla_user_computation(OP_NAME, list(tensors), computation)
    return table


def _build(tensors: Sequence[torch.Tensor]) -> Any:
    import torch_xla.core.xla_builder as xb

    shapes = xb.tensor_shape(list(tensors))  # the device's element types (they decide the bits)
    return xb.create_computation("xlagraph_fingerprint", _table, shapes)


def _table(*params: Any) -> Any:
    import torch_xla.core.xla_builder as xb

    rows = [_row(p) for p in params]
    return xb.Op.concat_in_dim(rows, 0, builder=rows[0].builder()) if len(rows) > 1 else rows[0]


def _row(x: Any) -> Any:
    """One tensor's (1, 5) s64 row."""
    import torch_xla.core.xla_builder as xb

    shape = x.shape()
    dtype, n = shape.dtype, 1
    for d in shape.sizes:
        n *= d
    b = x.builder()
    flat = x.reshape([n])
    bits = flat.bitcast(_BITS[dtype]).cast(xb.Type.S64) if dtype in _BITS else flat.cast(xb.Type.S64)
    positions = xb.Op.iota(b, xb.mkshape(xb.Type.S64, [n]), 0) + xb.Op.one(b, xb.Type.S64)
    fields = [_sum(bits, b), _sum(bits * positions, b)]
    if dtype in _BITS:
        zero, inf = xb.Op.zero(b, dtype), xb.Op.scalar(b, float("inf"), dtype)
        fields += [_count(flat.__ne__(flat), b), _count(flat.max(zero - flat).__eq__(inf), b)]
    else:
        fields += [xb.Op.zero(b, xb.Type.S64)] * 2
    wide = xb.Type.F64 if dtype == xb.Type.F64 else xb.Type.F32
    values = flat if dtype == wide else flat.cast(wide)
    norm = _fsum(values * values, b, wide).sqrt()
    if wide != xb.Type.F32:
        norm = norm.cast(xb.Type.F32)
    fields.append(norm.bitcast(xb.Type.S32).cast(xb.Type.S64))
    return xb.Op.concat_in_dim([f.reshape([1]) for f in fields], 0).reshape([1, len(fields)])


def _sum(v: Any, b: Any) -> Any:
    import torch_xla.core.xla_builder as xb

    return v.reduce(xb.Op.zero(b, xb.Type.S64), _add, [0])


def _count(mask: Any, b: Any) -> Any:
    import torch_xla.core.xla_builder as xb

    return _sum(mask.cast(xb.Type.S64), b)


def _fsum(v: Any, b: Any, dtype: str) -> Any:
    import torch_xla.core.xla_builder as xb

    return v.reduce(xb.Op.zero(b, dtype), _add, [0])


def _add(a: Any, c: Any) -> Any:
    return a + c
