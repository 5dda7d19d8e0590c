"""What changed, per instruction, as every view of a diff shows it (text, JSON, the HTML page,
GraphML): read here from what the diagnosis decided (its causes, each pair's `Decided`), so no
renderer decides it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause

__all__ = ["Decided", "changed_instructions", "named_instructions", "pair_statuses"]


@dataclass(frozen=True, eq=False)
class Decided:
    """What the diagnosis decided of one matched computation pair (`Comparison`), for the views
    to show: its pairs (the matching with the entry's parameters re-paired from evidence,
    `pair_left` / `pair_right`) and, per side, the paired instructions that changed (the compiled
    walk, rust/src/diagnose/changes.rs `matched_walk`: a new content or operands that do not
    correspond, where the two do not compute the same subgraph)."""

    left: Mapping[str, str]
    right: Mapping[str, str]
    changed_left: frozenset[str]
    changed_right: frozenset[str]


def pair_statuses(
    lc: CanonicalComputation, rc: CanonicalComputation, decided: Decided
) -> tuple[dict[str, str], dict[str, str]]:
    """Per side, the live instructions of a matched computation pair that are not `same`:
    `only-A` / `only-B` (unpaired) or `changed` (as the diagnosis decided), in instruction order."""
    left: dict[str, str] = {}
    right: dict[str, str] = {}
    for a in lc.order:
        b = decided.left.get(a)
        if b is None:
            left[a] = "only-A"
        elif a in decided.changed_left:
            left[a] = right[b] = "changed"
    for b in rc.order:
        if b not in decided.right:
            right[b] = "only-B"
    return left, right


def changed_instructions(causes: Iterable[Cause]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Instructions the causes that make the graphs differ name or change, per side, first seen
    first: the text's and the JSON's `changed` lists."""
    left: dict[str, None] = {}
    right: dict[str, None] = {}
    for cause in causes:
        left.update(dict.fromkeys(cause.left))
        right.update(dict.fromkeys(cause.right))
        for change in cause.changes:
            left.setdefault(change.left)
            right.setdefault(change.right)
    left.pop("", None)
    right.pop("", None)
    return tuple(left), tuple(right)


def named_instructions(causes: tuple[Cause, ...]) -> dict[str, set[str]]:
    """`changed_instructions` plus the inputs and outputs a permutation moves, per side ("A",
    "B"): what the HTML page shows open and marks as a cause's."""
    left, right = changed_instructions(causes)
    moved = [mv for cause in causes for mv in cause.mapping if mv.left != mv.right]
    named = {"A": {*left, *(mv.left_name for mv in moved)}, "B": {*right, *(mv.right_name for mv in moved)}}
    for names in named.values():
        names.discard("")
    return named
