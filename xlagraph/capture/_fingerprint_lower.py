"""Fingerprints on an XLA device as ONE user computation: every tensor of a step goes in as a
parameter, the (N, 5) int64 table comes out. Why one computation, and why its shape (blocks of
dimensions of at most 32, zero-padded at the end; the four sums in one variadic reduce,
`_fingerprint_reduce`; small tensors stacked by dtype and size) is what XLA's CPU compiler runs
fastest: docs/divergence.md ("Capture"), with the measurements.

Per tensor, the fields of `_fingerprints.fingerprint` (the norm's squares summed in f64; f64
tensors' norm in f64, the rest in f32); integer sums wrap modulo 2**64 as torch's int64 do, in any
order XLA reduces them. NaN and Inf are counted together as nan + inf * 2**32 and split once for
the whole table at the end. The weighted sum uses the element's row-major index in the block,
which is its flat position: the padding only adds positions after the last one."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from xlagraph.capture import _fingerprint_reduce

__all__ = ["fingerprint_xla", "is_built", "shapes_key"]

OP_NAME = "xla::_op_xlagraph_fingerprint"
_MAX_CACHED = 64
_CACHE: dict[tuple[Any, ...], Any] = {}  # (dtype, shape) per tensor -> XLA computation
built = 0  # computations built so far: a new one is a new graph for torch_xla to compile
_BITS = {"f64": "s64", "f32": "s32", "bf16": "s16", "f16": "s16"}
_SIDE = 32  # the largest dimension XLA's CPU compiler reduces without a reduce-window
_SPLIT = 1 << 32  # NaN count + Inf count * 2**32 in one s64 sum: exact below 2**32 elements
_COUNT_MAX = (1 << 31) - 1  # counts of larger tensors saturate here (the file's field is 32-bit)
# Tensors up to this size are stacked with the others of their dtype and size (one kernel for the
# group); a larger one is reduced alone: XLA writes the stacked copy out first, a pass over memory
# that cost more than the kernels it saves (4.3 against 2.4 ms a graph on 6.4M elements; up to
# 4096, 198 against 239 us on the benchmark's 49 tensors: benchmarks/bench_fp_graph.py).
_STACK_MAX = 4096
ONE_PASS = True  # the four sums in one variadic reduce (False: four reduces, to compare)


def shapes_key(tensors: Sequence[torch.Tensor]) -> tuple[Any, ...]:
    """What the computation depends on: each tensor's dtype and shape, in order."""
    return tuple([(t.dtype, t.shape) for t in tensors])


def is_built(key: tuple[Any, ...]) -> bool:
    """Whether the computation for `key` exists (else the next call builds it: a compile)."""
    return key in _CACHE


def fingerprint_xla(tensors: Sequence[torch.Tensor], key: tuple[Any, ...] | None = None) -> torch.Tensor:
    """(len(tensors), 5) int64 on the tensors' XLA device, rows in the order given; lazy."""
    import torch_xla

    global built
    if key is None:
        key = shapes_key(tensors)
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
    """(N, 5): the rows of each group of tensors of one dtype and size (see `_group_rows`), put
    back in the order of `params`, then the NaN/Inf pair split for all rows at once."""
    import torch_xla.core.xla_builder as xb

    b = params[0].builder()
    groups: dict[tuple[Any, int], list[int]] = {}
    for i, p in enumerate(params):
        shape = p.shape()
        n = _numel(shape.sizes)
        groups.setdefault((shape.dtype, n) if n <= _STACK_MAX else (i, n), []).append(i)
    parts, order = [], []
    for members in groups.values():
        parts.append(_group_rows([params[i] for i in members]))
        order += members
    grouped = xb.Op.concat_in_dim(parts, 0, builder=b) if len(parts) > 1 else parts[0]
    n = len(params)
    if order == list(range(n)):
        table = grouped
    else:  # row k of `grouped` is params[order[k]]
        where = {i: k for k, i in enumerate(order)}
        rows = [grouped.slice_in_dim(where[i], where[i] + 1, 0) for i in range(n)]
        table = xb.Op.concat_in_dim(rows, 0, builder=b)
    split = xb.Op.scalar(b, _SPLIT, xb.Type.S64).broadcast([n, 1])
    special = table.slice_in_dim(2, 3, 1)
    inf = special / split  # (special >= 0)
    columns = [table.slice_in_dim(0, 2, 1), special - inf * split, inf, table.slice_in_dim(3, 4, 1)]
    return xb.Op.concat_in_dim(columns, 1, builder=b)


def _group_rows(xs: list[Any]) -> Any:
    """The (g, 4) s64 rows of g tensors of one dtype and size: sum, weighted sum, NaN + Inf *
    2**32, norm bits. They are stacked on a leading axis (each its own block) and reduced over
    the others, so the whole group is one kernel."""
    import torch_xla.core.xla_builder as xb

    shape = xs[0].shape()
    dtype, n, g = shape.dtype, _numel(shape.sizes), len(xs)
    b = xs[0].builder()
    s64 = xb.Type.S64
    if n == 0:
        return xb.Op.zero(b, s64).broadcast([g, 4])
    dims = block_dims(n)
    size = _numel(dims)
    blocks = []
    for x in xs:
        flat = x.reshape([n])
        if size != n:
            flat = flat.pad(xb.Op.zero(b, dtype), [(0, size - n, 0)])
        blocks.append(flat.reshape([1, *dims]))
    block = xb.Op.concat_in_dim(blocks, 0, builder=b) if g > 1 else blocks[0]
    every = list(range(1, len(dims) + 1))  # all but the stacking axis
    zero = xb.Op.zero(b, s64)

    def total(v: Any) -> Any:
        return v.reduce(zero, _add, every)

    bits = block.bitcast(_BITS[dtype]).cast(s64) if dtype in _BITS else block.cast(s64)
    weighted = bits * _positions(b, dims).broadcast([g])
    # An f32 norm as `_fingerprints` and torch compute it (f64 tensors in f64): squares and their
    # sum in f32, so both overflow where theirs do, but the sum accumulated in f64 first: one
    # accumulator over the whole block (no tree of partial sums) would lose ~1e-4 of a
    # 2M-element tensor's norm in f32; in f64 nothing shows before the sum is rounded to f32.
    f64, f32 = xb.Type.F64, xb.Type.F32
    values = block if dtype in (f32, f64) else block.cast(f32)
    squares = values * values if dtype == f64 else (values * values).cast(f64)
    if dtype in _BITS:
        nan = block.__ne__(block).cast(s64)
        inf = block.max(xb.Op.zero(b, dtype) - block).__eq__(xb.Op.scalar(b, float("inf"), dtype)).cast(s64)
    special = nan + inf * xb.Op.scalar(b, _SPLIT, s64) if dtype in _BITS and n < _SPLIT else None
    if special is not None and ONE_PASS:  # the common case: the four sums in one pass
        fields = _fingerprint_reduce.sum4([bits, weighted, special, squares])
        square_sum = fields.pop()
    else:
        fields = [total(bits), total(weighted)]
        if special is not None:
            fields.append(total(special))
        elif dtype in _BITS:  # counted apart, each saturated, then packed
            top = xb.Op.scalar(b, _COUNT_MAX, s64).broadcast([g])
            fields.append(total(nan).min(top) + total(inf).min(top) * xb.Op.scalar(b, _SPLIT, s64))
        else:
            fields.append(zero.broadcast([g]))
        square_sum = squares.reduce(xb.Op.zero(b, f64), _add, every)
    norm = square_sum.sqrt().cast(f32) if dtype == f64 else square_sum.cast(f32).sqrt()
    fields.append(norm.bitcast(xb.Type.S32).cast(s64))
    return xb.Op.concat_in_dim([f.reshape([g, 1]) for f in fields], 1)


def _numel(sizes: Sequence[int]) -> int:
    n = 1
    for d in sizes:
        n *= d
    return n


def block_dims(n: int) -> list[int]:
    """Dimensions, each at most 32, whose product is at least n (n > 0), with little padding:
    two free leading dimensions, then as many dimensions of 32 as needed (the padding is under
    1/32 of the tensor once it is larger than 1024 elements)."""
    if n <= _SIDE:
        return [n]
    inner = 0
    while -(-n // _SIDE**inner) > _SIDE * _SIDE:
        inner += 1
    rows = -(-n // _SIDE**inner)
    a, c = min(((a, -(-rows // a)) for a in range(1, _SIDE + 1) if -(-rows // a) <= _SIDE), key=math.prod)
    return [a, c] + [_SIDE] * inner


def _positions(b: Any, dims: list[int]) -> Any:
    """s64 block of each element's 1-based row-major position."""
    import torch_xla.core.xla_builder as xb

    s64 = xb.Type.S64
    shape = xb.mkshape(s64, dims)
    out = xb.Op.one(b, s64)
    stride = 1
    for axis in reversed(range(len(dims))):
        index = xb.Op.iota(b, shape, axis)
        out = out + (index if stride == 1 else index * xb.Op.scalar(b, stride, s64))
        stride *= dims[axis]
    return out


def _add(a: Any, c: Any) -> Any:
    return a + c
