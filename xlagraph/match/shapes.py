"""The dimensions of an array shape, as the compiled matcher's shape keys carry them."""

from __future__ import annotations

__all__ = ["dims", "moved_dims"]


def dims(shape: str) -> list[int] | None:
    """The dimensions of an array shape (`f32[4,8]{1,0}` -> [4, 8]); None for a tuple or a token.

    >>> dims("f32[4,8]{1,0}"), dims("pred[]"), dims("(f32[2], s32[])")
    ([4, 8], [], None)
    """
    head, bracket, rest = shape.partition("[")
    if not bracket or head.startswith("("):
        return None
    try:
        return [int(d) for d in rest.partition("]")[0].split(",") if d]
    except ValueError:
        return None


def moved_dims(old: str, new: str) -> set[tuple[int, int]]:
    """(old, new) of each dimension that differs between two array shapes of one rank; empty for
    another rank, a tuple or a token (`f32[4,8]` -> `f32[4,2]` gives {(8, 2)})."""
    a, b = dims(old), dims(new)
    if a is None or b is None or len(a) != len(b):
        return set()
    return {(x, y) for x, y in zip(a, b, strict=True) if x != y}
