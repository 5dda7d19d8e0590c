"""Small helpers shared by the comparison steps: shapes, numbers, bounded lists."""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import pairwise

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout

__all__ = [
    "MAX_LISTED",
    "dim_changes",
    "dim_sizes",
    "dims_of",
    "element_type",
    "explained_by_dims",
    "fmt_list",
    "is_number",
    "numbers_equal",
    "order_changed",
    "reciprocal_dims",
    "shape_of",
    "whole_factors",
]

MAX_LISTED = 6
_INT = re.compile(r"\d+")


def shape_of(comp: CanonicalComputation, name: str) -> str:
    known = comp.compared_shapes
    shape = known.get(name)
    if shape is None:
        shape = known[name] = strip_layout(comp.computation.by_name[name].shape).replace(" ", "")
    return shape


def element_type(shape: str) -> str:
    """`bf16[4,8]` -> `bf16`; a tuple shape gives ``."""
    return "" if shape.startswith("(") else shape.split("[", 1)[0]


def dims_of(shape: str) -> str:
    """`bf16[4,8]` -> `[4,8]`: the shape without its element type."""
    return shape[len(element_type(shape)) :] if "[" in shape else shape


@lru_cache(maxsize=65536)
def dim_sizes(shape: str) -> tuple[int, ...] | None:
    """`f32[4,8]{1,0}` -> (4, 8); None for a tuple or a dynamic (`<=`, `?`) dimension. Cached: a
    report asks for the same few shapes in every diff."""
    try:
        return tuple(int(d) for d in dims_of(strip_layout(shape)).strip("[]").split(",") if d)
    except ValueError:
        return None


def whole_factors(a: str, b: str) -> bool:
    """Same rank, every dimension equal or a whole multiple of the other: a shard of one tensor
    (768 -> 384 when split over twice the devices)."""
    x, y = dim_sizes(a), dim_sizes(b)
    return (
        x is not None
        and y is not None
        and len(x) == len(y)
        and all(p and q and (p % q == 0 or q % p == 0) for p, q in zip(x, y, strict=True))
    )


def fmt_list(items: list[str], limit: int = MAX_LISTED) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def order_changed(pairs: list[tuple[int, int]]) -> bool:
    """True when matched positions do not keep their relative order (an insertion does)."""
    rights = [r for _, r in sorted(pairs)]
    return any(b < a for a, b in pairwise(rights))


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def numbers_equal(a: str, b: str) -> bool:
    """The same number printed two ways (`1` and `1.0`). Integers compare as integers: a float
    holds 53 bits, and u64/s64 constants past 2^53 that differ would compare equal."""
    if not (is_number(a) and is_number(b)):
        return False
    try:
        return int(a) == int(b)
    except ValueError:
        return float(a) == float(b)


def dim_changes(old: str, new: str) -> set[tuple[str, str]]:
    """`f32[4,8]` -> `f32[2,8]` gives {("4", "2")}: constants equal to a changed dimension follow it."""
    a = _INT.findall(old.split("[", 1)[-1])
    b = _INT.findall(new.split("[", 1)[-1])
    return {(x, y) for x, y in zip(a, b, strict=False) if x != y}


def explained_by_dims(old: str, new: str, dims: set[tuple[str, str]]) -> bool:
    """Every number that differs between `old` and `new` follows a changed input dimension:
    equal to it (4 -> 3) or in proportion to it (32 -> 24 when 4 -> 3)."""
    if not dims:
        return False
    a, b = _INT.findall(old), _INT.findall(new)
    if len(a) != len(b):
        return False
    ratios = [(int(x), int(y)) for x, y in dims]
    changed = [(int(x), int(y)) for x, y in zip(a, b, strict=True) if x != y]
    return bool(changed) and all(any(x * q == y * p for p, q in ratios) for x, y in changed)


def reciprocal_dims(old: str, new: str, dims: set[tuple[str, str]]) -> bool:
    """A scaling constant that follows a changed dimension: 1/4 -> 1/3 when 4 -> 3."""
    if not (is_number(old) and is_number(new)) or not dims:
        return False
    o, n = float(old), float(new)
    for x, y in dims:
        fx, fy = float(x), float(y)
        if fx and fy and abs(o * fx - n * fy) < 1e-6 * max(abs(o * fx), 1.0):
            return True
    return False
