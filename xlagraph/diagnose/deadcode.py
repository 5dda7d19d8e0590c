"""Dead code: a cause only when it is the one thing that differs, otherwise a note.

PyTorch/XLA hashes the IR of every node it lowers, used or not, so two graphs computing the
same results but with different unused nodes (`std_mean` for its mean alone, say) still compile
twice. The same dead code on both sides, or dead code that changed along with a difference
another cause explains, is only noted.

Instructions with a side effect (`send`, `outfeed`, a custom-call marked as having one) run
whether or not a result reads them, as XLA keeps them: what they send is compared in full, and a
difference there is a cause like any other.
"""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter

from xlagraph._kept import kept_while_alive
from xlagraph.canonical import CanonicalComputation, CanonicalModule
from xlagraph.diagnose.causes import HINTS, Cause, CauseKind
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.sources import sources_of

__all__ = ["dead_code"]


def dead_code(
    lcanon: CanonicalModule, rcanon: CanonicalModule, explained: bool
) -> tuple[list[Cause], list[str]]:
    """(causes, notes) about instructions that never reach a result."""
    (ldead, lsig, leff), (rdead, rsig, reff) = _of(lcanon), _of(rcanon)
    if not explained and sorted(leff.values()) != sorted(reff.values()):
        return [_effect_cause(leff, reff)], []
    if not ldead and not rdead:
        return [], []
    opcodes = sorted({*lsig, *rsig})
    if lsig == rsig or explained:
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


# What dead code a module has depends on it alone: kept for a report's other diffs.
_Dead = tuple[list[tuple[CanonicalComputation, str]], list[str], dict[tuple[str, str], int]]


@kept_while_alive
def _of(canon: CanonicalModule) -> _Dead:
    """(its dead instructions, their signature, its unread side effects); never modify them."""
    dead = [(c, d) for c in canon.computations.values() for d in c.dead]
    return (dead, _signature(dead), _effects(canon))


def _signature(dead: list[tuple[CanonicalComputation, str]]) -> list[str]:
    """Opcodes, not shapes: dead code whose shapes only follow a changed input is the same code.
    Asked of the core's handle where there is one (no instruction built: thousands are dead)."""
    opcodes: list[str] = []
    for comp, group in groupby(dead, key=itemgetter(0)):
        opcodes += comp.core.opcodes_of([d for _, d in group])  # type: ignore[attr-defined]
    return sorted(opcodes)


def _effects(canon: CanonicalModule) -> dict[tuple[str, str], int]:
    """Instructions with a side effect that no result reads (dead, or reached only through a tuple
    forwarding skips, as a `send-done` beside the value it sent) -> what they do, hashed as the
    canonical form hashes them (identifiers aside, live operands by structure)."""
    return {
        (c.computation.name, d): h
        for c in canon.computations.values()
        if c.dead or c.plumbing
        for d, h in c.core.effect_hashes().items()  # type: ignore[attr-defined]
    }


def _effect_cause(leff: dict[tuple[str, str], int], reff: dict[tuple[str, str], int]) -> Cause:
    lsig, rsig = sorted(leff.values()), sorted(reff.values())
    lonly = [n for (_, n), v in leff.items() if v not in rsig]
    ronly = [n for (_, n), v in reff.items() if v not in lsig]
    opcodes = sorted({n.rsplit(".", 1)[0] for n in lonly + ronly})
    return Cause(
        CauseKind.STRUCTURE,
        f"side effects: {len(lonly)} instruction(s) in A and {len(ronly)} in B "
        f"({fmt_list(opcodes, 4)}) that no result reads but that run all the same (what a send "
        "sends, what an outfeed writes)",
        HINTS[CauseKind.STRUCTURE],
        tuple(lonly),
        tuple(ronly),
    )
