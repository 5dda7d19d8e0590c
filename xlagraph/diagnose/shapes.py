"""Shapes as the comparison steps read them: element type, dimensions, sizes, shards, layouts."""

from __future__ import annotations

from functools import lru_cache

from xlagraph.canonical import CanonicalComputation
from xlagraph.match.shapes import dims


def shape_of(comp: CanonicalComputation, name: str) -> str:
    """`name`'s shape as compared (`CanonicalComputation.compared_shapes`)."""
    return comp.compared_shapes[name]


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
    found = dims(shape) if shape else []  # an empty shape has no dimensions, as it always read
    return None if found is None else tuple(found)


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


# A tensor that changed element type stays a float (autocast, .half(), float64 numpy data): a
# float output and a bool output of the same dimensions are two different tensors.
FLOAT_TYPES = frozenset({"f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2"})


def layout_differs(a: str, b: str) -> bool:
    """Both printed with a layout, and the layouts differ (a dump printed without layouts says
    nothing about them)."""
    if a == b:  # most shapes compared: equal as printed, equal without spaces
        return False
    a, b = a.replace(" ", ""), b.replace(" ", "")
    return "{" in a and "{" in b and not a.startswith("(") and a != b
