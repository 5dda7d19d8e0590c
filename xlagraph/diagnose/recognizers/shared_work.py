"""Work an added output shares with the others, which XLA implements another way once compiled.

An output that comes and goes (a MoE layer that also returns its load-balancing loss) often reads
work the other outputs read too (the router's top_k). Before optimization that shared work is the
same in both programs; after XLA's passes it may not be: with a second reader of the routing
indices, XLA keeps the top_k as a full `sort` of the logits and slices it inside the fusions, where
with one reader it rewrote it into the `TopK` custom-call. That region follows from the output
added, not from a change of its own: folded into `output_added` (`output_removed` the other way).

Evidence, in compiled programs only (both entries call fusions): a region of the entry the side
with the extra output computes, some of which feeds that output; whose other side's sizes are all
among its own once fusions are opened (the same values at the same sizes: a top_k of another `k`,
a resized tensor, is a change of its own); and the regions inside fused computations whose callers
read such a region on both sides (the slice to the first `k` moved into the fusion).
"""

from __future__ import annotations

from collections.abc import Iterable

from xlagraph.canonical.model import CanonicalModule
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import fold_into
from xlagraph.diagnose.recognizers._dataflow import upstream
from xlagraph.diagnose.recognizers.fused_cascade import _entry_callers, _home, _work, fusions_opened
from xlagraph.diagnose.shapes import dim_sizes

__all__ = ["RECOGNIZER"]

_OUTPUTS = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)
# Ops that order, pick or move values: how XLA stages a top_k (a sort of an iota beside the values,
# then a slice), not arithmetic of the program's.
_RESTAGES = frozenset({"sort", "iota", "slice", "dynamic-slice", "concatenate", "pad", "copy", "transpose"})


_FUSION = frozenset({"fusion"})


def _compiled(canon: CanonicalModule) -> bool:
    # By the core's opcode index: a graph before optimization has no fusion, and reading each of
    # its entry's ~100K instructions into Python to find none cost ~0.3 CPU-s a report.
    return next(canon.entry.with_opcodes(_FUSION), None) is not None


def _sizes(canon: CanonicalModule, names: Iterable[str], comp: str) -> set[int]:
    """Every dimension size the named instructions (of `comp`, else of any computation) and the
    computations they call hold, tuples opened."""
    home = canon.computations.get(comp)
    found: set[int] = set()
    todo = []
    for n in names:
        ins = home.computation.by_name.get(n) if home is not None else None
        comps = canon.computations.values()
        ins = ins or next((c.computation.by_name[n] for c in comps if n in c.computation.by_name), None)
        if ins is not None:
            todo.append(ins)
    for ins in fusions_opened(canon, todo):
        for part in ins.shape.strip("()").split(", "):
            found.update(dim_sizes(part.split("{")[0].strip()) or ())
    return found


_Side = tuple[CanonicalModule, tuple[str, ...]]


def _sides(evidence: Evidence, cause: Cause, extra_right: bool) -> tuple[_Side, _Side]:
    """(module, names) of the side with the extra output first, then the other side."""
    right, left = (evidence.right, cause.right), (evidence.left, cause.left)
    return (right, left) if extra_right else (left, right)


def _shared(evidence: Evidence, output: Cause, region: Cause) -> bool:
    """An entry region of which the extra output's side feeds that output, the other side's sizes
    all among its own."""
    if region.kind is not CauseKind.STRUCTURE or region.info:
        return False
    if region.computation != evidence.left.entry.name:
        return False
    extra_right = output.kind is CauseKind.OUTPUT_ADDED
    (mine, names), (theirs, other) = _sides(evidence, region, extra_right)
    outs = [ch.right if extra_right else ch.left for ch in output.changes if ch.what == "output"]
    if not names or not outs:
        return False
    feeds = upstream(mine.entry.operands, [o for o in outs if o])
    if not set(names) & feeds:
        return False
    if set(names) & set(mine.entry.outputs) or set(other) & set(theirs.entry.outputs):
        return False  # an output computed otherwise is a change of the outputs both have
    entry = mine.entry.name, theirs.entry.name
    if not _sizes(theirs, other, entry[1]) <= _sizes(mine, names, entry[0]):
        return False
    # For the outputs both have, the same arithmetic: what the region does that does not feed the
    # extra output, beyond the other side's work, only orders, picks or moves values.
    new = _work(mine, tuple(n for n in names if n not in feeds)) - _work(theirs, other)
    return set(new) <= _RESTAGES


def _reads_folded(evidence: Evidence, region: Cause, folded: list[Cause]) -> bool:
    """A region inside fused computations whose entry callers read, on each side it has names on,
    an instruction of a folded region."""
    if region.kind is not CauseKind.STRUCTURE or region.info:
        return False
    if region.computation == evidence.left.entry.name:
        return False
    found = False
    for canon, names, theirs in (
        (evidence.left, region.left, {n for c in folded for n in c.left}),
        (evidence.right, region.right, {n for c in folded for n in c.right}),
    ):
        if not names:
            continue
        home = _home(canon, names, region.computation)
        if home is None or home.name == canon.entry.name:
            return False
        read = {o for c in _entry_callers(canon, home.name) for o in canon.entry.operands.get(c, ())}
        if not read & theirs:
            return False
        found = True
    return found


def _recognize(evidence: Evidence, everything: tuple[Cause, ...]) -> Recognized:
    if not (_compiled(evidence.left) and _compiled(evidence.right)):
        return NOTHING
    for i, output in enumerate(everything):
        if output.kind not in _OUTPUTS or output.info:
            continue
        regions = [j for j, c in enumerate(everything) if _shared(evidence, output, c)]
        if not regions:
            continue
        taken = [everything[k] for k in regions]
        fused = [j for j, c in enumerate(everything) if _reads_folded(evidence, c, taken)]
        what = (
            f"{len(regions) + len(fused)} region(s) of work the other outputs share with it, which XLA "
            "compiles another way where this output reads it too"
        )
        return fold_into(everything, i, regions + fused, what)
    return NOTHING


RECOGNIZER = Recognizer("shared_work", _recognize)
