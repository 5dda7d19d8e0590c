"""How close an earlier graph is to a recompiled one, by their diff: the rule that picks a
recompile's baseline among the candidates diffed in full (`report.baseline` diffs them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.runlog import Sync

__all__ = ["Compared", "closest_of", "measure"]

_REORDER = frozenset({CauseKind.PARAMETER_PERMUTATION, CauseKind.OUTPUT_PERMUTATION})


@dataclass(frozen=True)
class Compared:
    """One candidate the full diff compared, and what its diff counted: instructions involved in
    its causes, how many causes, and what they are: only warm-up state this graph has and the
    candidate lacks (`state_init`), or only a reordering (permutations)."""

    graph_hash: str
    sync: Sync
    involved: int
    causes: int
    warm_up: bool
    reorder: bool = False


def measure(graph_hash: str, sync: Sync, differences: Sequence[Cause]) -> Compared:
    """The candidate `graph_hash` (first synced at `sync`) counted by its diff's `differences`."""
    # Similarity is about what the graphs compute: unused instructions do not make them less alike.
    involved = sum(len(c.left) + len(c.right) for c in differences if c.kind is not CauseKind.DEAD_CODE)
    kinds = {c.kind for c in differences if c.kind is not CauseKind.DEAD_CODE}
    state = [c for c in differences if c.kind is CauseKind.STATE_INIT]
    warm_up = kinds == {CauseKind.STATE_INIT} and all(c.info for c in state)
    return Compared(graph_hash, sync, involved, len(differences), warm_up, bool(kinds) and kinds <= _REORDER)


def closest_of(candidates: Sequence[Compared]) -> int:
    """The place in `candidates` of the baseline. Where another candidate is this graph reordered
    (the same computation), one that differs only by warm-up state loses to it whatever the
    sizes: it predates state the two share, and the loop is taking turns between the orders (B,
    C, B, C after A: C is B reordered, not A plus state). A warm-up against other changes is left
    to size: state made mid-run (a layer unfrozen) is warmed up again next step. Then the size of
    the difference: one reordering (two permutation causes) is closer than new state plus work;
    then the fewest causes, then the most recent."""
    reordered = any(c.reorder for c in candidates)

    def score(k: int) -> tuple[bool, int, int, int]:
        c = candidates[k]
        return (c.warm_up and reordered, c.involved, c.causes, -c.sync.index)

    return min(range(len(candidates)), key=score)
