"""Layout differences between two canonical computations, for the diff to report.

Layouts (minor-to-major order, tiling, memory space `S(n)`) are kept out of the structural hashes
so that matching pairs instructions whatever their layout, but they are part of each
computation's `hash` and so of the module fingerprint: two graphs that differ only in layout are
never `identical`. These functions say where they differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from xlagraph.canonical.model import CanonicalComputation

__all__ = ["LayoutChange", "layout_changes"]


class LayoutChange(NamedTuple):
    """One matched instruction whose layout differs; "" is XLA's default layout."""

    computation: str
    left: str
    right: str
    old: str
    new: str


def layout_changes(
    left: CanonicalComputation, right: CanonicalComputation, pairs: Mapping[str, str]
) -> tuple[LayoutChange, ...]:
    """The matched instructions (`pairs`: left name -> right name) whose layouts differ, in the
    left computation's order. `layout_changes(lc, rc, matching.left)` after `match(lc, rc)`."""
    out = []
    for a in left.order:
        b = pairs.get(a)
        if b is None:
            continue
        old, new = left.layouts.get(a, ""), right.layouts.get(b, "")
        if old != new:
            out.append(LayoutChange(left.name, a, b, old, new))
    return tuple(out)
