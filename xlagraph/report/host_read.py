"""What a value read on the host mid-step (`.item()`, `int(t)`, `.tolist()`) syncs, and what it
does not. torch_xla 2.9 syncs only the read tensor's own pending work for such a read, and keeps
no result for the graph: the step's sync computes that work again while a Python name holds it.

So a read cuts the step only when its work is the step's (`.item()` of the loss mid-step); a read
whose graph shares nothing with the step's graph is work of its own (a token sampled from the
compiled call's logits, in the branch of a generation loop that samples), and the step's graph
that returns that same work beside the step's is that work synced again, not a tensor kept
alive by accident.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import INTERFACE, Cause, CauseKind
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import call_site
from xlagraph.diff import DiffResult, canonical_of
from xlagraph.ir import Module
from xlagraph.runlog import Sync
from xlagraph.source_paths import short_location

__all__ = ["read_again", "shares_no_work"]

# Instructions that carry values in or out and compute nothing.
_PLUMBING = frozenset({"parameter", "constant", "tuple", "get-tuple-element"})


def _work(entry: CanonicalComputation, names: set[str] | None = None) -> list[str]:
    """The live instructions of `entry` that compute (within `names`, where given)."""
    opcodes = {i.name: i.opcode for i in entry.computation.instructions}
    return [n for n in entry.order if opcodes.get(n) not in _PLUMBING and (names is None or n in names)]


def shares_no_work(result: DiffResult) -> bool:
    """No instruction that computes was paired between the two graphs: every one of each side is
    in a difference (a read whose graph has nothing of the graph it is compared with)."""
    for module, side in ((result.left, "left"), (result.right, "right")):
        involved = {n for c in result.differences for n in getattr(c, side)}
        work = _work(module.entry)
        if not work or any(n not in involved for n in work):
            return False
    return True


def read_again(
    target: Sync,
    result: DiffResult,
    causes: tuple[Cause, ...],
    syncs: Sequence[Sync],
    triggers: dict[int, str],
    module_of: Callable[[str], Module | str],
) -> Cause | None:
    """The cause of `target` where what it adds to its baseline (outputs and the work and inputs
    that make them, nothing else) is, op for op, the whole graph of a host read earlier in the
    same step at another line, a graph that shares no work with the baseline: the step's sync
    computing that read's work again, on the steps that take the branch which reads it. Each
    graph is compiled once and replayed by every step of that kind; None where it is not so."""
    live = [c for c in causes if not c.info]
    if not live or any(c.kind not in INTERFACE or c.left for c in live):
        return None
    entry = result.right.entry
    added = Counter(entry.keys[n] for n in _work(entry, {x for c in live for x in c.right}))
    if not added:
        return None
    site = call_site(target.frames)
    for s in reversed(syncs):
        if s.index >= target.index or s.step != target.step:
            continue
        if triggers.get(s.index) not in IMPLICIT_TRIGGERS or call_site(s.frames) in ("", site):
            continue
        module = module_of(s.graph_hash)
        if not isinstance(module, Module):
            continue
        entry = canonical_of(module).entry
        if Counter(entry.keys[n] for n in _work(entry)) != added:
            continue
        read = call_site(s.frames)
        lines = tuple(dict.fromkeys([read, *(x for c in live for x in c.sources)]))
        return Cause(
            CauseKind.CONDITIONAL_WORK,
            f"the work read on the host at {short_location(read)} earlier in this step, synced again: "
            "torch_xla keeps no result of a host read, and the names that hold it are still alive at "
            "the step's sync, so the step's graph returns it beside the step's own work on the steps "
            "that read it (a branch the other steps do not take); each graph is compiled once and "
            "replayed",
            fix("own_graph"),
            right=tuple(x for c in live for x in c.right),
            changes=tuple(ch for c in live for ch in c.changes),
            sources=lines,
            info=True,
        )
    return None
