"""Inputs or outputs that arrive in another order: whether they moved, and the cause that says so."""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

from xlagraph.diagnose.causes import CauseKind, Moved
from xlagraph.diagnose.listing import fmt_list

if TYPE_CHECKING:
    from xlagraph.diagnose.comparison import Comparison


def permutation_cause(
    cmp: Comparison, kind: CauseKind, moved: list[Moved], what: str, item: str, why: str
) -> None:
    """One permutation cause: how many of the matched inputs or outputs moved, a few examples, and
    the whole mapping."""
    changed = tuple(mv for mv in moved if mv.left != mv.right)
    cmp.cause(
        kind,
        f"{what} ({len(changed)} of {len(moved)} moved, e.g. "
        + fmt_list([f"A's {item}{mv.left} is B's {mv.right}" for mv in changed], 3)
        + f"): {why}",
        [mv.left_name for mv in changed],
        [mv.right_name for mv in changed],
        mapping=tuple(moved),
    )


def order_changed(pairs: list[tuple[int, int]]) -> bool:
    """True when matched positions do not keep their relative order (an insertion does)."""
    rights = [r for _, r in sorted(pairs)]
    return any(b < a for a, b in pairwise(rights))
