"""What the cross-rank view holds (ranks, groups, collectives, the view), and how ranks are
grouped and named.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from xlagraph.ir import Module

ModuleLoader = Callable[[str], Module]


@dataclass(frozen=True)
class CollectiveOp:
    """One collective as a rank issues it. Ranks line up when `key` is equal."""

    kind: str
    operands: tuple[str, ...]  # operand shapes, without layout
    groups: str  # replica_groups as printed ("" when absent)
    variant: str  # the graph it belongs to
    name: str  # the instruction name in that graph

    @property
    def key(self) -> tuple[str, tuple[str, ...], str]:
        return (self.kind, self.operands, self.groups)

    @property
    def shapes(self) -> str:
        return self.operands[0] if len(self.operands) == 1 else f"({', '.join(self.operands)})"


@dataclass(frozen=True)
class RankGroup:
    """Ranks that ran the same graphs at a step; `collective` at a mismatch, what they issue."""

    ranks: tuple[int, ...]
    variants: tuple[str, ...]
    collective: CollectiveOp | None = None


class RankDiff(NamedTuple):
    """The engine's diff of a group's graph (`variant`) against the baseline group's (`baseline`)
    at the divergent step; `note` says why there are no causes when there are none."""

    group: int  # index into RankDivergence.groups
    baseline: str
    variant: str
    causes: tuple[Any, ...]  # xlagraph.diagnose Cause
    note: str


@dataclass(frozen=True)
class RankDivergence:
    """The first step where ranks ran different graphs; `groups[0]` is the baseline (largest)."""

    step: int
    groups: tuple[RankGroup, ...]
    diffs: tuple[RankDiff, ...]


@dataclass(frozen=True)
class CollectiveMismatch:
    """The first collective position where ranks disagree: where a real job would hang."""

    step: int
    position: int  # 1-based within the step, over the step's graphs in execution order
    groups: tuple[RankGroup, ...]
    lined_up: int  # collectives that lined up before it, from the divergent step on
    text: str


@dataclass(frozen=True)
class RankView:
    ranks: tuple[int, ...]
    processes: tuple[str, ...]
    world: int | None
    strip: tuple[tuple[str, ...], ...]  # per rank, per step: variant letters ("A", "B+C", "" none)
    variants: tuple[tuple[str, str, str], ...]  # (letter, graph hash, module spec)
    divergence: RankDivergence | None
    collectives: CollectiveMismatch | None
    collectives_compared: int
    notes: tuple[str, ...]
    unit: str = "step"  # what a column is: "step", or "compile" for per-rank --xla_dump_to folders

    @property
    def agree(self) -> bool:
        return self.divergence is None


def describe_ranks(ranks: Sequence[int]) -> str:
    """`rank 3`, `ranks 0-2`, `ranks 0, 2, 5-7`."""
    rs = sorted(ranks)
    parts, i = [], 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        parts.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ("rank " if len(rs) == 1 else "ranks ") + ", ".join(parts)


def group_ranks(
    ranks: tuple[int, ...], rows: list[tuple[str, ...] | None]
) -> list[tuple[list[int], tuple[str, ...] | None]]:
    groups: dict[tuple[str, ...] | None, list[int]] = {}
    for rank, row in zip(ranks, rows, strict=True):
        groups.setdefault(row, []).append(rank)
    # baseline: the largest group, then the one holding the lowest rank
    return sorted(((rs, row) for row, rs in groups.items()), key=lambda g: (-len(g[0]), g[0][0]))
