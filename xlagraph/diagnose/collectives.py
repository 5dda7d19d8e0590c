"""Collectives compared as one ordered sequence, so that a change of bucketing reads as one cause."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import NamedTuple

from xlagraph._kept import kept_while_alive
from xlagraph.canonical import CanonicalModule
from xlagraph.canonical.attributes import normalize_attribute
from xlagraph.diagnose.fixes import fix
from xlagraph.ir import Instruction, strip_layout
from xlagraph.opcodes import COLLECTIVES

__all__ = [
    "COLLECTIVES",
    "GROUPS_CHANGED",
    "ORDER_HINT",
    "OTHER_TENSORS_HINT",
    "Collective",
    "collectives",
    "describe",
    "is_collective",
    "regrouped_only",
    "summarize",
]


def _kind(opcode: str) -> str:
    """`xla::reduce_scatter` (lazy IR) and `reduce-scatter` (HLO) are the same collective."""
    if opcode.startswith("xla::"):
        opcode = opcode[5:].replace("_", "-")
    return opcode.removesuffix("-start")


@lru_cache(maxsize=1024)
def is_collective(opcode: str) -> bool:
    """Cached: asked for every instruction of a module, over a few dozen distinct opcodes."""
    k = _kind(opcode)
    return k in COLLECTIVES or f"{k}-start" in COLLECTIVES


class Collective(NamedTuple):
    name: str
    kind: str
    operands: tuple[str, ...]  # operand shapes without layout
    shape: str
    groups: str
    dimensions: str

    @property
    def signature(self) -> tuple[str, tuple[str, ...], str, str]:
        return (self.kind, self.operands, self.groups, self.dimensions)


def collectives(canon: CanonicalModule) -> list[Collective]:
    """Every collective of the module that runs, read by a result or not, in printed (program)
    order."""
    return list(_find(canon))


# Asked for by the comparison, several recognizers and the report, for the same modules again
# and again (a report compares each graph with several candidates): found once per module.
@kept_while_alive
def _find(canon: CanonicalModule) -> tuple[Collective, ...]:
    out = []
    for comp in canon.module.computations:
        canonical = canon.computations.get(comp.name)
        if canonical is None:
            continue
        # Most computations run none: their opcodes are told at C speed, once each, by the core's
        # handle (`canonical.computation` is `comp`: the handle's indices are `comp`'s).
        core = canonical.core
        kinds = {o for o in core.opcode_names() if is_collective(o)}  # type: ignore[attr-defined]
        if not kinds:
            continue
        # XLA's dead-code pass keeps cross-partition collectives: one that no result reads still
        # runs, and must still line up across ranks.
        # (Tested by membership: no set of every live name is built.)
        live, dead = canonical.operands, set(canonical.dead)
        by_name = comp.by_name
        for ins in canonical.with_opcodes(kinds):
            if ins.name not in live and ins.name not in dead:
                continue
            shapes = tuple(strip_layout(by_name[o].shape) for o in ins.operands if o in by_name)
            groups = normalize_attribute("replica_groups", ins.attribute("replica_groups", "") or "")
            if ins.attribute("device_ids"):  # mesh-axes form: `mesh[...], device_ids=(...) {axes}`
                groups += " device_ids=" + normalize_attribute(
                    "device_ids", ins.attribute("device_ids") or ""
                )
            pairs = ins.attribute("source_target_pairs")
            if pairs:  # collective-permute: which device sends to which (a ring's direction)
                groups += " pairs=" + normalize_attribute("source_target_pairs", pairs)
            reducer = _reduction(canon, ins)
            if reducer:  # all-reduce / reduce-scatter: psum vs pmax is another collective
                groups += f" reduce={reducer}"
            dims = ins.attribute("dimensions", "") or ins.attribute("scatter_dimension", "") or ""
            out.append(Collective(ins.name, _kind(ins.opcode), shapes, strip_layout(ins.shape), groups, dims))
    return tuple(out)


def _reduction(canon: CanonicalModule, ins: Instruction) -> str:
    """The opcode a collective's reducer computation ends in (`add`, `maximum`), or ""."""
    for name in ins.called:
        comp = canon.module.by_name.get(name)
        if comp is not None:
            return comp.root.opcode
    return ""


OTHER_TENSORS_HINT = fix("collective.other_tensors")
ORDER_HINT = fix("collective.order")


def regrouped_only(left: list[Collective], right: list[Collective]) -> bool:
    """The same tensors collected, only grouped into other collectives (bucketing): per kind, the
    same operand shapes overall."""

    def operands(ops: list[Collective]) -> Counter[tuple[str, str]]:
        return Counter((c.kind, shape) for c in ops for shape in c.operands)

    return operands(left) == operands(right)


def describe(ops: list[Collective]) -> str:
    """`3 reduce-scatter (4, 4, 2 operands), 1 all-reduce (1 operand)`."""
    if not ops:
        return "none"
    counts = Counter(o.kind for o in ops)
    parts = []
    for kind, n in counts.items():
        sizes = [len(o.operands) for o in ops if o.kind == kind]
        detail = ", ".join(map(str, sizes[:8])) + (", …" if len(sizes) > 8 else "")
        parts.append(f"{n} {kind} ({detail} operand{'s' if max(sizes) != 1 else ''})")
    return ", ".join(parts)


# The `Cause.case` of collectives paired one to one, some over other replica groups: the
# `parallelism` recognizer reads it (the summary lists only the first few changes).
GROUPS_CHANGED = "collective.replica_groups"


def summarize(left: list[Collective], right: list[Collective]) -> tuple[str, str]:
    """One line on how two ordered collective sequences differ, and its case (`GROUPS_CHANGED`
    where a pair runs over other replica groups, else ``)."""
    if Counter(c.kind for c in left) != Counter(c.kind for c in right) or len(left) != len(right):
        return f"collectives regrouped: A has {describe(left)}; B has {describe(right)}", ""
    changes, case = [], ""
    for a, b in zip(left, right, strict=True):
        if a.signature == b.signature:
            continue
        if a.groups != b.groups:
            case = GROUPS_CHANGED  # said for every pair, shown or not
            changes.append(f"{a.kind} {a.name} replica groups {a.groups or '{}'} -> {b.groups or '{}'}")
        elif a.operands != b.operands:
            changes.append(f"{a.kind} {a.name} operands {', '.join(a.operands)} -> {', '.join(b.operands)}")
        else:
            changes.append(f"{a.kind} {a.name} dimensions {a.dimensions} -> {b.dimensions}")
    shown = "; ".join(changes[:4]) + (f"; and {len(changes) - 4} more" if len(changes) > 4 else "")
    return f"the same {describe(left)} run over other groups or operands: {shown}", case
