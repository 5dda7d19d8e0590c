"""The dimensions of an array shape, as the compiled matcher's shape keys carry them."""

from __future__ import annotations

__all__ = ["dims"]


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
