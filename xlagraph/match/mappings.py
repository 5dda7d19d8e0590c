"""The pairing of instructions between two computations, as the matcher returns it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Matching"]


@dataclass(frozen=True, eq=False)
class Matching:
    """`left[a] == b` when left instruction `a` corresponds to right instruction `b`;
    `matcher[a]` names the phase that paired them (shown in reports)."""

    left: dict[str, str]
    right: dict[str, str]
    matcher: dict[str, str]
