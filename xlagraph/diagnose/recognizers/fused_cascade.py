"""Changes inside a fusion that follow from a cause already named: compiled HLO's echo.

After XLA's passes the work sits in fused computations. An input baked into a constant, an input
of another shape or values converted to bf16 change the fusions that read them too: a select on a
cache position gone, an add of the new sequence length, a fusion of converts only in the bf16
program. Those regions are the named cause's consequences, not patterns of their own, so they are
folded into it when the fusion's caller reads (directly or not) what that cause names. So are
regions of the entry that do the same work but for how XLA stages a reduction over a resized
dimension (`_restaged`): with 64 cache positions a max or a sum runs as a reduce-window and a
reduce, with 32 as one reduce, though the program asks for the same reduction. And beside a
dtype change, a collective in bf16 that XLA promoted to f32 (`_promoted`): its reducer cloned
as `region_1.0_promoted`, the converts around it, and the reducer the other side has instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from math import prod

from xlagraph._kept import kept_while_alive
from xlagraph.canonical.model import CanonicalComputation, CanonicalModule
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import union
from xlagraph.diagnose.recognizers._dataflow import RESTATES, upstream
from xlagraph.diagnose.shapes import dim_sizes
from xlagraph.ir import Instruction, strip_layout
from xlagraph.opcodes import COLLECTIVES

__all__ = ["RECOGNIZER"]

# What may be an echo, and what may explain it.
_LOOSE = (CauseKind.STRUCTURE, CauseKind.ATTRIBUTE)
_ROOTS = (
    CauseKind.PARAMETER_REMOVED,
    CauseKind.PARAMETER_ADDED,
    CauseKind.PARAMETER_SHAPE,
    CauseKind.DTYPE,
    CauseKind.CONSTANT_VALUE,
)
_DEVICE_IDS = frozenset({"partition-id", "replica-id"})
# Ops a fusion of value conversions is made of (XLA's convert_convert_fusion and the like).
_CONVERTS = frozenset({"convert", "parameter", "bitcast", "copy", "reshape", "broadcast", "tuple"})


def _home(canon: CanonicalModule, names: tuple[str, ...], hint: str) -> CanonicalComputation | None:
    """The computation the named instructions live in (the cause's own, else the first holding one)."""
    if hint in canon.computations and any(n in canon.computations[hint].computation.by_name for n in names):
        return canon.computations[hint]
    return next(
        (c for c in canon.computations.values() if any(n in c.computation.by_name for n in names)), None
    )


# Which instructions call each computation, per module: built once, asked for per loose cause.
@kept_while_alive
def _callers(canon: CanonicalModule) -> dict[str, list[tuple[str, str]]]:
    """Computation -> (calling computation, calling instruction) for every call in the module."""
    found: dict[str, list[tuple[str, str]]] = {}
    for c in canon.computations.values():
        for ins in c.computation.instructions:
            for callee in ins.called:
                found.setdefault(callee, []).append((c.name, ins.name))
    return found


def _entry_callers(canon: CanonicalModule, comp: str) -> set[str]:
    """The entry instructions that call `comp`, through any depth of nesting."""
    entry, callers = canon.entry.name, _callers(canon)
    found: set[str] = set()
    seen, todo = {comp}, [comp]
    while todo:
        for parent, ins in callers.get(todo.pop(), ()):
            if parent == entry:
                found.add(ins)
            elif parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return found


def _cone(canon: CanonicalModule, names: tuple[str, ...], hint: str) -> set[str]:
    """What a region inside a called computation reads in the entry: its callers and their inputs."""
    home = _home(canon, names, hint)
    if home is None or home.name == canon.entry.name:
        return set()
    return upstream(canon.entry.operands, _entry_callers(canon, home.name))


def _only_converts(canon: CanonicalModule, names: tuple[str, ...]) -> bool:
    """Every instruction is a convert, or a fusion whose body only converts and moves values."""
    for name in names:
        ins = canon.entry.computation.by_name.get(name)
        if ins is None:
            return False
        if ins.opcode == "fusion":
            body = [canon.computations.get(c) for c in ins.called]
            if not body or any(
                b is None or {i.opcode for i in b.computation.instructions} - _CONVERTS for b in body
            ):
                return False
        elif ins.opcode not in _CONVERTS:
            return False
    return True


def _crossed(everything: tuple[Cause, ...]) -> list[int]:
    """Op sizes that only trade places (one reshape f32[2,8,16] -> f32[2,8,32], another the other
    way): the matcher crossed two ops of one layer (a tensor-parallel pair of weights) once other
    work moved them; nothing changed size."""
    sized = [i for i, c in enumerate(everything) if c.attribute_only("shape") and not c.info]
    old = Counter(strip_layout(ch.old) for i in sized for ch in everything[i].changes)
    new = Counter(strip_layout(ch.new) for i in sized for ch in everything[i].changes)
    return sized if sized and old == new else []


def _resharded(evidence: Evidence, everything: tuple[Cause, ...], taken: list[int]) -> list[int]:
    """Beside a collective: the SPMD partitioner's own slicing by device (partition-id and the
    dynamic-slice it feeds) and shard shapes of the same size laid out another way (f32[8,32] ->
    f32[32,8] when the feature axis is sharded instead of the batch)."""
    out = []
    for i, c in enumerate(everything):
        if i in taken or c.info or c.kind not in _LOOSE:
            continue
        if c.kind is CauseKind.STRUCTURE:
            ops = {ins.opcode for _, ins in evidence.instructions(c)}
            if ops & _DEVICE_IDS:
                out.append(i)
        elif c.changes and all(ch.what == "shape" and _same_size(ch.old, ch.new) for ch in c.changes):
            out.append(i)
    return out


# What only moves or names values, counted out when two regions' work is compared.
_PLUMBING = (RESTATES - {"convert"}) | {"parameter", "constant", "tuple", "get-tuple-element", "fusion"}


def fusions_opened(canon: CanonicalModule, start: list[Instruction]) -> Iterator[Instruction]:
    """`start` and, for each fusion among what it yields, its fused computation's instructions
    (each computation opened once)."""
    todo = list(start)
    seen: set[str] = set()
    while todo:
        ins = todo.pop()
        yield ins
        for callee in ins.called if ins.opcode == "fusion" else ():
            body = canon.computations.get(callee)
            if body is not None and callee not in seen:
                seen.add(callee)
                todo += body.computation.instructions


def _work(canon: CanonicalModule, names: tuple[str, ...]) -> Counter[str]:
    """The ops `names` (entry instructions) compute, fusions opened, plumbing left out."""
    by_name = canon.entry.computation.by_name
    start = [by_name[n] for n in names if n in by_name]
    return Counter(ins.opcode for ins in fusions_opened(canon, start) if ins.opcode not in _PLUMBING)


def _restaged(evidence: Evidence, cause: Cause) -> bool:
    """An entry region whose two sides compute the same ops once fusions are opened, but for
    reduce-windows before their reductions (a reduction's first stage): XLA's choice for another
    size, not the user's work."""
    if cause.kind is not CauseKind.STRUCTURE or cause.computation != evidence.left.entry.name:
        return False
    left, right = _work(evidence.left, cause.left), _work(evidence.right, cause.right)
    windows = left.pop("reduce-window", 0) + right.pop("reduce-window", 0)
    return windows > 0 and "reduce" in left and left == right


_PROMOTED = "_promoted"  # the suffix of XLA's AllReducePromotion's clone of a reducer


def _promoted(evidence: Evidence, cause: Cause) -> bool:
    """A region that is a collective XLA promoted from bf16 to f32: in the entry, converts and
    collectives of the same kinds and shapes on both sides, one of them calling a `_promoted`
    reducer; elsewhere, a reducer one side has as `X` and the other as `X_promoted`."""
    if cause.kind is not CauseKind.STRUCTURE:
        return False
    sides = ((evidence.left, cause.left, evidence.right), (evidence.right, cause.right, evidence.left))
    if cause.computation != evidence.left.entry.name:
        for (canon, names, other), theirs in zip(sides, (cause.right, cause.left), strict=True):
            home = _home(canon, names, cause.computation) if names and not theirs else None
            if home is None or home.name == canon.entry.name:
                continue  # (the reducer is found where its instructions live, either side)
            name = home.name
            twin = name.removesuffix(_PROMOTED) if name.endswith(_PROMOTED) else name + _PROMOTED
            if twin in other.computations:
                return True
        return False
    kinds: list[Counter[tuple[str, str]]] = []
    promoted = False
    for canon, names, _ in sides:
        found: Counter[tuple[str, str]] = Counter()
        for n in names:
            ins = canon.entry.computation.by_name.get(n)
            if ins is None:
                return False
            if ins.opcode in COLLECTIVES:
                found[ins.opcode, strip_layout(ins.shape)] += 1
                promoted = promoted or any(c.endswith(_PROMOTED) for c in ins.called)
            elif not _only_converts(canon, (n,)):
                return False
        kinds.append(found)
    return promoted and kinds[0] == kinds[1]


def _same_size(a: str, b: str) -> bool:
    da, db = dim_sizes(a), dim_sizes(b)
    return da is not None and db is not None and da != db and prod(da) == prod(db)


def _recognize(evidence: Evidence, everything: tuple[Cause, ...]) -> Recognized:
    folded: dict[int, list[int]] = {}
    crossed = _crossed(everything)
    named = [i for i, c in enumerate(everything) if c.kind not in _LOOSE and not c.info]
    if crossed and named:
        folded[max(named, key=lambda i: everything[i].count)] = crossed
    collective = [i for i, c in enumerate(everything) if c.kind is CauseKind.COLLECTIVE and not c.info]
    if collective:
        resharded = _resharded(evidence, everything, crossed)
        if resharded:
            folded.setdefault(collective[0], []).extend(resharded)
            crossed = crossed + resharded
    roots = [i for i, c in enumerate(everything) if c.kind in _ROOTS and not c.info]
    if not roots and not folded:
        return NOTHING
    for i, c in enumerate(everything):
        if c.kind not in _LOOSE or c.info or i in crossed or not roots:
            continue
        left = _cone(evidence.left, c.left, c.computation)
        right = _cone(evidence.right, c.right, c.computation)
        root = next(
            (r for r in roots if left & set(everything[r].left) or right & set(everything[r].right)), None
        )
        if root is None and _restaged(evidence, c):
            root = next((r for r in roots if everything[r].kind is CauseKind.PARAMETER_SHAPE), None)
        if root is None and _promoted(evidence, c):
            root = next((r for r in roots if everything[r].kind is CauseKind.DTYPE), None)
        if root is None and c.computation == evidence.left.entry.name:
            # Conversions the bf16 program adds in its entry (fusions of converts only).
            dtype = [r for r in roots if everything[r].kind is CauseKind.DTYPE]
            if dtype and _only_converts(evidence.right, tuple(n for n in c.right if n not in c.left)):
                root = dtype[0]
        if root is not None:
            folded.setdefault(root, []).append(i)
    if not folded:
        return NOTHING
    causes = []
    for root, echoes in folded.items():
        parts = [everything[root], *(everything[i] for i in echoes)]
        causes.append(
            replace(
                everything[root],
                left=union(p.left for p in parts),
                right=union(p.right for p in parts),
                sources=union(p.sources for p in parts)[:6],
                count=sum(p.count for p in parts),
            )
        )
    return Recognized(tuple(causes), frozenset(folded) | frozenset(i for e in folded.values() for i in e))


RECOGNIZER = Recognizer("fused_cascade", _recognize)
