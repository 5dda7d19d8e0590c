"""Dead code: a cause only when it is the one thing that differs, otherwise a note.

PyTorch/XLA hashes the IR of every node it lowers, used or not, so two graphs computing the
same results but with different unused nodes (`std_mean` for its mean alone, say) still compile
twice. The same dead code on both sides, or dead code that changed along with a difference
another cause explains, is only noted.
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation, CanonicalModule
from xlagraph.diagnose.causes import HINTS, Cause, CauseKind
from xlagraph.diagnose.common import fmt_list
from xlagraph.diagnose.sources import sources_of

__all__ = ["dead_code"]


def dead_code(
    lcanon: CanonicalModule, rcanon: CanonicalModule, explained: bool
) -> tuple[list[Cause], list[str]]:
    """(causes, notes) about instructions that never reach a result."""
    ldead = [(c, d) for c in lcanon.computations.values() for d in c.dead]
    rdead = [(c, d) for c in rcanon.computations.values() for d in c.dead]
    if not ldead and not rdead:
        return [], []
    opcodes = sorted({c.instruction(d).opcode for c, d in ldead + rdead})
    if _signature(ldead) == _signature(rdead) or explained:
        return [], [
            f"{len(ldead)} instruction(s) in A and {len(rdead)} in B never reach a result "
            f"({fmt_list(opcodes, 4)}): ignored, they do not change what the graph computes"
        ]
    names = [(lcanon, c, (d,)) for c, d in ldead] + [(rcanon, c, (d,)) for c, d in rdead]
    user, library = sources_of(names, [])
    summary = (
        f"the graphs compute the same results but their dead code differs ({len(ldead)} unused "
        f"instruction(s) in A, {len(rdead)} in B: {fmt_list(opcodes, 4)}); PyTorch/XLA hashes "
        "unused nodes too, so this recompiles: an op computed for an output nobody uses"
    )
    cause = Cause(
        CauseKind.DEAD_CODE,
        summary,
        HINTS[CauseKind.DEAD_CODE],
        tuple(d for _, d in ldead),
        tuple(d for _, d in rdead),
        sources=user or library,
        library=library,
    )
    return [cause], []


def _signature(dead: list[tuple[CanonicalComputation, str]]) -> list[str]:
    """Opcodes, not shapes: dead code whose shapes only follow a changed input is the same code."""
    return sorted(c.instruction(d).opcode for c, d in dead)
