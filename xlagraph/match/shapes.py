"""Shape rules the matchers share (the Python phases and the compiled matcher's keys): the
dimensions of an array shape, and whether two shapes are shards of one another."""

from __future__ import annotations

__all__ = ["dims", "sharded_alike"]


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


def sharded_alike(a: str, b: str) -> bool:
    """Same rank, each dimension equal or split by a whole factor (any element type). A size 1
    is no evidence of a split: `f32[4,1]` and `f32[4,3]` are two task heads, not one sharded."""
    x, y = dims(a), dims(b)
    return (
        x is not None
        and y is not None
        and len(x) == len(y)
        and all(p == q or (min(p, q) > 1 and max(p, q) % min(p, q) == 0) for p, q in zip(x, y, strict=True))
    )
