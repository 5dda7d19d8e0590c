"""The collective sequences ranks issue from the divergent step on, and the first position where
they do not line up: kind, operand shapes and replica groups must all agree.
"""

from __future__ import annotations

from pathlib import Path

from xlagraph.errors import XlagraphError
from xlagraph.ir import Module, strip_layout
from xlagraph.opcodes import COLLECTIVE_KINDS
from xlagraph.report.ranks.model import (
    CollectiveMismatch,
    CollectiveOp,
    ModuleLoader,
    RankGroup,
    describe_ranks,
    group_ranks,
)
from xlagraph.report.ranks.sources import BEFORE_SUFFIX, uncompressed_name

MAX_STEPS_COMPARED = 200  # collective sequences compared from the divergent step on


def collectives_of(module: Module, variant: str) -> tuple[CollectiveOp, ...]:
    """The collectives a graph issues, in program order: the entry computation's instructions in
    order, descending into the computations an instruction calls (while bodies, conditionals,
    calls) where it stands."""
    by_name = module.by_name
    out: list[CollectiveOp] = []
    seen: set[str] = set()

    def walk(name: str) -> None:
        comp = by_name.get(name)
        if comp is None or name in seen:
            return
        seen.add(name)
        shapes = {ins.name: ins.shape for ins in comp.instructions}
        for ins in comp.instructions:
            kind = ins.opcode.removesuffix("-start")
            if kind in COLLECTIVE_KINDS:
                operands = tuple(strip_layout(shapes.get(o, "?")) for o in ins.operands)
                groups = ins.attribute("replica_groups", "") or ""
                out.append(CollectiveOp(kind, operands, groups, variant, ins.name))
            elif ins.called and kind not in ("reduce", "reduce-window", "scatter", "sort", "map"):
                for called in ins.called:
                    walk(called)
        seen.discard(name)  # a computation called twice issues its collectives twice

    walk(module.entry.name)
    return tuple(out)


def first_mismatch(
    ranks: tuple[int, ...],
    per_rank: list[dict[int, tuple[str, ...]]],
    letters: dict[str, str],
    specs: dict[str, str],
    span: tuple[int, int],
    load: ModuleLoader,
    notes: list[str],
    unit: str,
) -> tuple[CollectiveMismatch | None, int]:
    first, last = span
    cache: dict[str, tuple[CollectiveOp, ...] | None] = {}

    def ops(h: str) -> tuple[CollectiveOp, ...] | None:
        if h not in cache:
            try:
                spec = _partitioned_twin(specs[h]) if specs.get(h) else ""
                cache[h] = collectives_of(load(spec), letters[h]) if spec else None
            except (XlagraphError, RecursionError):
                cache[h] = None
        return cache[h]

    lined_up = 0
    for step in range(first, min(last, first + MAX_STEPS_COMPARED - 1) + 1):
        seqs: list[list[CollectiveOp] | None] = []
        for steps in per_rank:
            row = steps.get(step)
            if row is None:
                seqs.append([])
                continue
            seq: list[CollectiveOp] | None = []
            for h in row:
                got = ops(h)
                if got is None:
                    seq = None
                    break
                seq.extend(got)  # type: ignore[union-attr]
            seqs.append(seq)
        if any(s is None for s in seqs):
            missing = sorted(
                {letters[h] for steps in per_rank for h in steps.get(step, ()) if ops(h) is None}
            )
            notes.append(
                f"collectives compared up to {unit} {step}: the HLO of {', '.join(missing)} was not kept"
            )
            return None, lined_up
        longest = max(len(s or ()) for s in seqs)
        for pos in range(longest):
            at = [s[pos] if s is not None and pos < len(s) else None for s in seqs]
            keys = [op.key if op else None for op in at]
            if len(set(keys)) == 1:
                lined_up += 1
                continue
            grouped = group_ranks(ranks, [(str(k),) for k in keys])
            groups = tuple(RankGroup(tuple(rs), (), at[ranks.index(rs[0])]) for rs, _ in grouped)
            return CollectiveMismatch(
                step, pos + 1, groups, lined_up, _mismatch_text(step, pos + 1, groups, unit)
            ), lined_up
    return None, lined_up


def _partitioned_twin(spec: str) -> str:
    """Under SPMD the partitioner adds the collectives: a capture keeps the module after
    partitioning beside the one before it (`<prefix>.<platform>_after_optimizations.txt`, or
    `.txt.xz` as capture stores it); the collectives are read from it when it is there."""
    plain = uncompressed_name(spec)
    if not plain.endswith(BEFORE_SUFFIX):
        return spec
    path = Path(plain)
    prefix = path.name.removesuffix(BEFORE_SUFFIX)
    twins = sorted(
        t
        for t in path.parent.glob(f"{prefix}.*after_optimizations.txt*")
        if uncompressed_name(t.name).endswith("after_optimizations.txt")
    )
    return str(twins[0]) if twins else spec


def _mismatch_text(step: int, position: int, groups: tuple[RankGroup, ...], unit: str) -> str:
    def runs(g: RankGroup) -> str:
        who = describe_ranks(g.ranks)
        verb = "runs" if len(g.ranks) == 1 else "run"
        if g.collective is None:
            return f"{who} {verb} no collective #{position}"
        op = g.collective
        return f"{who} {verb} {op.kind} #{position} {op.shapes} (graph {op.variant})"

    odd = [runs(g) for g in groups[1:]]
    return f"{unit} {step}: {'; '.join(odd)} where {runs(groups[0])}"
