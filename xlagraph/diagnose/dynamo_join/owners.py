"""Which XLA graphs each torch.compile compile made: the join of dynamo's compiles to the graphs
of the run (`report/dynamo.py` says each compile with its graphs and their cost)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol, TypeVar

from xlagraph.dynamolog import DynamoCompile

__all__ = ["FirstRun", "owners"]


class FirstRun(Protocol):
    """A graph of the run: where it first ran, and whether the run compiled it."""

    @property
    def first_step(self) -> int: ...
    @property
    def first_sync(self) -> int: ...
    @property
    def compiled(self) -> bool: ...


G = TypeVar("G", bound=FirstRun)


def owners(compiles: Sequence[DynamoCompile], graphs: Sequence[G]) -> dict[str, list[G]]:
    """Compile id -> the graphs compiled for it: a graph first run in a step belongs to the last
    compile (in the order dynamo began them) of that step that began at or before its first sync."""
    owned: dict[str, list[G]] = defaultdict(list)
    for g in graphs:
        if not g.compiled:
            continue
        owner = None
        for c in compiles:
            if c.step == g.first_step and c.sync is not None and c.sync <= g.first_sync:
                owner = c
        if owner is not None:
            owned[owner.compile_id].append(g)
    return owned
