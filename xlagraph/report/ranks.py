"""The ranks of a multi-process run side by side: did every rank run the same graphs, step by step,
and do their collectives line up? Pure functions over the processes' `RunLog`s.

A data-parallel or SPMD job is only as stable as its least stable rank: a rank that compiles
another graph makes the others wait, and a rank whose graph holds other collectives (another
kind, shape or order) makes every rank wait forever in the first collective that does not line
up. torch_xla says nothing about either. This compares:

* the rank x step strip: which graph (variant letter, shared by all ranks) each rank ran at each
  step, `+` joining the graphs of a step that ran several (an implicit sync splits a step);
* the first step where ranks differ, the ranks grouped by what they ran, and the engine's diff
  of the first pair of graphs that differ there (baseline: the largest group);
* the collective sequences from that step on, as every rank issues them (graphs in execution
  order, collectives in program order inside each graph), and the first position where ranks
  do not issue the same collective: kind, operand shapes and replica groups must all agree.

A rank is read from the process's capture (`rank R of W`) or, for per-rank dumps without
capture, from the file's ordinal suffix (`save.hlo.3`) or folder name (`rank3`, `3`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from xlagraph.errors import XlagraphError
from xlagraph.ir import Module, strip_layout
from xlagraph.opcodes import COLLECTIVE_KINDS
from xlagraph.progress import counted
from xlagraph.runlog import GraphRecord, RunLog, Step, Sync

__all__ = [
    "CollectiveMismatch",
    "CollectiveOp",
    "RankDiff",
    "RankDivergence",
    "RankGroup",
    "RankView",
    "collectives_of",
    "describe_ranks",
    "rank_dir_runs",
    "rank_of",
    "rank_view",
    "runlog_from_dump_dir",
]

MAX_STEPS_COMPARED = 200  # collective sequences compared from the divergent step on
MAX_GROUPS_DIFFED = 3  # rank groups whose graphs are diffed against the baseline group
_RANK_NOTE = re.compile(r"^rank (\d+) of (\S+)$")
_ORDINAL = re.compile(r"(?:^|[._-])(?:rank)?(\d+)$")
_SAVE_FILE = re.compile(r"^(.+)\.(\d+)$")  # torch_xla's XLA_SAVE_TENSORS_FILE + ".<ordinal>"
_RANK_DIR = re.compile(r"^(?:rank[_-]?)?(\d+)$")
_BEFORE = ".before_optimizations.txt"
DUMP_DIR_NOTE = (
    "per-rank --xla_dump_to folder: it holds compiles only, so each column is one compile (in dump "
    "order), not a step, and graphs that only ran from the cache are not seen"
)
ModuleLoader = Callable[[str], Module]


@dataclass(frozen=True)
class CollectiveOp:
    """One collective as a rank issues it. Ranks line up when `key` is equal."""

    kind: str
    operands: tuple[str, ...]  # operand shapes, without layout
    groups: str  # replica_groups as printed ("" when absent)
    variant: str  # the graph it belongs to
    name: str  # the instruction name in that graph

    @property
    def key(self) -> tuple[str, tuple[str, ...], str]:
        return (self.kind, self.operands, self.groups)

    @property
    def shapes(self) -> str:
        return self.operands[0] if len(self.operands) == 1 else f"({', '.join(self.operands)})"


@dataclass(frozen=True)
class RankGroup:
    """Ranks that ran the same graphs at a step; `collective` at a mismatch, what they issue."""

    ranks: tuple[int, ...]
    variants: tuple[str, ...]
    collective: CollectiveOp | None = None


class RankDiff(NamedTuple):
    """The engine's diff of a group's graph (`variant`) against the baseline group's (`baseline`)
    at the divergent step; `note` says why there are no causes when there are none."""

    group: int  # index into RankDivergence.groups
    baseline: str
    variant: str
    causes: tuple[Any, ...]  # xlagraph.diagnose Cause
    note: str


@dataclass(frozen=True)
class RankDivergence:
    """The first step where ranks ran different graphs; `groups[0]` is the baseline (largest)."""

    step: int
    groups: tuple[RankGroup, ...]
    diffs: tuple[RankDiff, ...]


@dataclass(frozen=True)
class CollectiveMismatch:
    """The first collective position where ranks disagree: where a real job would hang."""

    step: int
    position: int  # 1-based within the step, over the step's graphs in execution order
    groups: tuple[RankGroup, ...]
    lined_up: int  # collectives that lined up before it, from the divergent step on
    text: str


@dataclass(frozen=True)
class RankView:
    ranks: tuple[int, ...]
    processes: tuple[str, ...]
    world: int | None
    strip: tuple[tuple[str, ...], ...]  # per rank, per step: variant letters ("A", "B+C", "" none)
    variants: tuple[tuple[str, str, str], ...]  # (letter, graph hash, module spec)
    divergence: RankDivergence | None
    collectives: CollectiveMismatch | None
    collectives_compared: int
    notes: tuple[str, ...]
    unit: str = "step"  # what a column is: "step", or "compile" for per-rank --xla_dump_to folders

    @property
    def agree(self) -> bool:
        return self.divergence is None


def rank_of(log: RunLog) -> int | None:
    """The rank a process recorded, else the ordinal of a per-rank dump's name."""
    for note in log.notes:
        m = _RANK_NOTE.match(note)
        if m:
            return int(m.group(1))
    if log.kind == "capture":
        return None
    m = _ORDINAL.search(Path(log.source).name)
    return int(m.group(1)) if m else None


def rank_dir_runs(path: str) -> tuple[RunLog, ...] | None:
    """The per-rank dumps of a folder written without capture, one RunLog per rank, or None when
    the folder is not one: save files `<name>.<ordinal>` (two or more, one name), or
    --xla_dump_to folders named by rank (`rank0`, `rank1`, ... or `0`, `1`, ...)."""
    p = Path(path)
    try:
        entries = sorted(p.iterdir())
    except OSError:
        return None
    files: dict[str, list[tuple[int, Path]]] = {}
    dirs: list[tuple[int, Path]] = []
    for e in entries:
        if e.is_file() and (m := _SAVE_FILE.match(e.name)):
            files.setdefault(m.group(1), []).append((int(m.group(2)), e))
        elif e.is_dir() and (m := _RANK_DIR.match(e.name)) and _before_files(e):
            dirs.append((int(m.group(1)), e))
    if len(files) == 1 and len(next(iter(files.values()))) >= 2 and not dirs:
        from xlagraph.report.savefile import runlog_from_save_file

        saved = sorted(next(iter(files.values())))
        return tuple(runlog_from_save_file(str(f)) for _, f in counted("rank", saved))
    if len(dirs) >= 2 and not files:
        return tuple(runlog_from_dump_dir(str(d)) for _, d in counted("rank", sorted(dirs)))
    return None


def runlog_from_dump_dir(path: str) -> RunLog:
    """A --xla_dump_to folder as a run: one compile per before-optimizations module, in dump
    order (XLA numbers modules as it creates them); a graph is known by its text's hash."""
    from xlagraph.capture.files import dump_order
    from xlagraph.parse.sources import read_bytes

    files = sorted(_before_files(Path(path)), key=lambda f: (dump_order(f.name), f.name))
    syncs, steps, graphs = [], [], {}
    for i, f in enumerate(files):
        h = "dump:" + hashlib.sha1(read_bytes(f)).hexdigest()[:24]  # regular files, bounded
        first = h not in graphs
        graphs.setdefault(h, GraphRecord(graph_hash=h, module=str(f)))
        syncs.append(Sync(index=i, step=i, graph_hash=h, compiled=first))
        steps.append(Step(index=i, start=0.0, end=0.0, compiles=int(first), executions=1))
    return RunLog(
        source=path,
        kind="dump-dir",
        process=Path(path).name,
        syncs=tuple(syncs),
        graphs=graphs,
        steps=tuple(steps),
        notes=(DUMP_DIR_NOTE,),
    )


def _world_of(logs: Sequence[RunLog]) -> int | None:
    for log in logs:
        for note in log.notes:
            m = _RANK_NOTE.match(note)
            if m and m.group(2).isdigit():
                return int(m.group(2))
    return None


def describe_ranks(ranks: Sequence[int]) -> str:
    """`rank 3`, `ranks 0-2`, `ranks 0, 2, 5-7`."""
    rs = sorted(ranks)
    parts, i = [], 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        parts.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ("rank " if len(rs) == 1 else "ranks ") + ", ".join(parts)


def _steps(log: RunLog) -> dict[int, tuple[str, ...]]:
    out: dict[int, list[str]] = {}
    for sync in log.syncs:
        out.setdefault(sync.step, []).append(sync.graph_hash)
    for step in log.steps:  # a step without a graph execution is still a step
        out.setdefault(step.index, [])
    return {k: tuple(v) for k, v in sorted(out.items())}


def rank_view(logs: Sequence[RunLog], loader: ModuleLoader | None = None) -> RankView | None:
    """The cross-rank view of several processes, or None when there is nothing to compare: one
    process, or processes whose ranks are unknown or repeat (several runs of one process in a
    folder, shown with `--run all`; such processes are reported one by one, not as ranks)."""
    if len(logs) < 2:
        return None
    ranked = [(rank_of(log), log) for log in logs]
    if any(r is None for r, _ in ranked) or len({r for r, _ in ranked}) < len(ranked):
        return None
    ranked.sort(key=lambda rl: rl[0] or 0)
    ranks = tuple(int(r or 0) for r, _ in ranked)
    runs = [log for _, log in ranked]
    load = loader or _default_loader()
    letters: dict[str, str] = {}
    specs: dict[str, str] = {}
    per_rank = [_steps(log) for log in runs]
    last = max((max(s, default=-1) for s in per_rank), default=-1)
    for step in range(last + 1):
        for log, steps in zip(runs, per_rank, strict=True):
            for h in steps.get(step, ()):
                if h not in letters:
                    letters[h] = _letter(len(letters))
                    record = log.graphs.get(h)
                    specs[h] = record.module if record else ""
                elif not specs[h] and (record := log.graphs.get(h)) is not None:
                    specs[h] = record.module
    strip = tuple(
        tuple("+".join(letters[h] for h in steps[i]) if i in steps else "" for i in range(last + 1))
        for steps in per_rank
    )
    notes: list[str] = []
    unit = "compile" if any(log.kind == "dump-dir" for log in runs) else "step"
    if unit == "compile":
        notes.append(DUMP_DIR_NOTE)
    divergence = _divergence(ranks, per_rank, letters, specs, last, load)
    mismatch, compared = (None, 0)
    if divergence is not None and unit == "compile":
        notes.append("collectives not compared: a compile-only view cannot tell which graphs each rank ran")
    elif divergence is not None:
        mismatch, compared = _collectives(
            ranks, per_rank, letters, specs, (divergence.step, last), load, notes, unit
        )
    if unit == "step" and len({len(s) for s in per_rank}) > 1:  # fewer compiles is no early stop
        counts = {r: len(s) for r, s in zip(ranks, per_rank, strict=True)}
        fewest = min(counts.values())
        short = [r for r, n in counts.items() if n == fewest]
        notes.append(
            f"{describe_ranks(short)} recorded {fewest} {unit}s, others up to {max(counts.values())}: "
            "a rank that stops early (or was killed) leaves the others waiting in their next collective"
        )
    return RankView(
        ranks=ranks,
        processes=tuple(log.process for log in runs),
        world=_world_of(runs),
        strip=strip,
        variants=tuple((letter, h, specs.get(h, "")) for h, letter in letters.items()),
        divergence=divergence,
        collectives=mismatch,
        collectives_compared=compared,
        notes=tuple(notes),
        unit=unit,
    )


def _default_loader() -> ModuleLoader:
    """Reads each module once; a save file is split once however many graphs it holds."""
    from xlagraph.parse.sources import open_source, read, select, split_spec

    sources: dict[str, object] = {}
    modules: dict[str, Module] = {}

    def load(spec: str) -> Module:
        if spec not in modules:
            path, index = split_spec(spec)
            if path not in sources:
                sources[path] = open_source(path)
            modules[spec] = read(select(sources[path], index, spec))  # type: ignore[arg-type]
        return modules[spec]

    return load


def _letter(n: int) -> str:
    from xlagraph.graphs import variant_letter

    return variant_letter(n)


def _group(
    ranks: tuple[int, ...], rows: list[tuple[str, ...] | None]
) -> list[tuple[list[int], tuple[str, ...] | None]]:
    groups: dict[tuple[str, ...] | None, list[int]] = {}
    for rank, row in zip(ranks, rows, strict=True):
        groups.setdefault(row, []).append(rank)
    # baseline: the largest group, then the one holding the lowest rank
    return sorted(((rs, row) for row, rs in groups.items()), key=lambda g: (-len(g[0]), g[0][0]))


def _divergence(
    ranks: tuple[int, ...],
    per_rank: list[dict[int, tuple[str, ...]]],
    letters: dict[str, str],
    specs: dict[str, str],
    last: int,
    load: ModuleLoader,
) -> RankDivergence | None:
    for step in range(last + 1):
        rows = [steps.get(step) for steps in per_rank]
        if len(set(rows)) == 1:
            continue
        grouped = _group(ranks, rows)
        groups = tuple(
            RankGroup(tuple(rs), tuple(letters[h] for h in row) if row is not None else ())
            for rs, row in grouped
        )
        base = grouped[0][1] or ()
        diffs = []
        for gi, (_, row) in enumerate(grouped[1 : 1 + MAX_GROUPS_DIFFED], 1):
            pair = _first_pair(base, row or ())
            if pair is None:
                continue
            a, b = pair
            causes, note = _diff(specs.get(a, ""), specs.get(b, ""), load)
            diffs.append(RankDiff(gi, letters[a], letters[b], causes, note))
        return RankDivergence(step, groups, tuple(diffs))
    return None


def _first_pair(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, str] | None:
    """The first position where two steps ran different graphs (the last graph of the shorter
    step when one is a prefix of the other)."""
    for x, y in zip(a, b, strict=False):
        if x != y:
            return x, y
    if a and b and a[-1] != b[-1]:
        return a[-1], b[-1]
    return None


def _diff(spec_a: str, spec_b: str, load: ModuleLoader) -> tuple[tuple[Any, ...], str]:
    if not spec_a or not spec_b:
        return (), "the HLO of one of the graphs was not kept: no diff"
    try:
        from xlagraph.diff import diff_modules

        result = diff_modules(load(spec_a), load(spec_b))
    except XlagraphError as e:
        return (), f"could not be compared: {e}"
    except RecursionError:
        return (), "could not be compared: HLO nested too deeply"
    if result.verdict == "identical":
        return (), "the graphs are the same computation (torch_xla hashed them apart)"
    if result.verdict == "undetermined":
        return (), (
            "the graphs print the same but for constants printed as {...}: their values (which "
            "torch_xla hashed apart) are not in the dumps"
        )
    return tuple(result.differences), ""


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


def _collectives(
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
            grouped = _group(ranks, [(str(k),) for k in keys])
            groups = tuple(RankGroup(tuple(rs), (), at[ranks.index(rs[0])]) for rs, _ in grouped)
            return CollectiveMismatch(
                step, pos + 1, groups, lined_up, _mismatch_text(step, pos + 1, groups, unit)
            ), lined_up
    return None, lined_up


def _partitioned_twin(spec: str) -> str:
    """Under SPMD the partitioner adds the collectives: a capture keeps the module after
    partitioning beside the one before it (`<prefix>.<platform>_after_optimizations.txt`, or
    `.txt.xz` as capture stores it); the collectives are read from it when it is there."""
    plain = _uncompressed_name(spec)
    if not plain.endswith(_BEFORE):
        return spec
    path = Path(plain)
    prefix = path.name.removesuffix(_BEFORE)
    twins = sorted(
        t
        for t in path.parent.glob(f"{prefix}.*after_optimizations.txt*")
        if _uncompressed_name(t.name).endswith("after_optimizations.txt")
    )
    return str(twins[0]) if twins else spec


def _uncompressed_name(name: str) -> str:
    """`name` without `.xz` or `.gz`: a compressed dump is read as the text it holds."""
    from xlagraph.parse.compressed import SUFFIXES

    return next((name.removesuffix(s) for s in SUFFIXES if name.endswith(s)), name)


def _before_files(folder: Path) -> list[Path]:
    """The before-optimizations modules of a --xla_dump_to folder, plain or compressed."""
    return [f for f in folder.glob(f"*{_BEFORE}*") if _uncompressed_name(f.name).endswith(_BEFORE)]


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


def rank_sources(specs: Sequence[str]) -> tuple[RunLog, ...] | None:
    """The runs of several ranks given without capture, or None when `specs` are not that.

    One folder of per-rank dumps (`rank_dir_runs`), or two or more whole multi-graph sources
    named one by one (`xlagraph diff save.hlo.0 save.hlo.3`, two `--xla_dump_to` folders): each
    is one rank, numbered by the ordinal in its name, else by its place in `specs`. A spec with
    `#K` names one graph and is never a rank.
    """
    from xlagraph.parse.sources import open_source, single_graph_file

    if any("#" in s for s in specs):
        return None
    if len(specs) == 1:
        return rank_dir_runs(specs[0]) if os.path.isdir(specs[0]) else None
    if any(single_graph_file(s) for s in specs):
        return None  # told from the head: `xlagraph diff a.hlo b.hlo` does not read them twice
    sources = [open_source(s) for s in specs]
    # Whole runs: every one a save file or a dump folder, and not all of a single graph (two
    # single graphs are a plain diff).
    if not all(src.kind in ("save-file", "dump-dir") for src in sources):
        return None
    if all(len(src.graphs) == 1 for src in sources):
        return None
    from xlagraph.report.savefile import runlog_from_save_file

    logs = [
        runlog_from_dump_dir(s) if src.kind == "dump-dir" else runlog_from_save_file(s)
        for s, src in zip(specs, sources, strict=True)
    ]
    ranks = [rank_of(log) for log in logs]
    if any(r is None for r in ranks) or len(set(ranks)) < len(ranks):
        ranks = list(range(len(logs)))  # names without distinct ordinals: the order given
    return tuple(
        replace(log, notes=(*log.notes, _GIVEN_RANK.format(r)))  # the world size is not known
        for r, log in zip(ranks, logs, strict=True)
    )


_GIVEN_RANK = "rank {} of ?"


def given_rank(log: RunLog) -> int | None:
    """The rank `rank_sources` gave a run named on the command line (by its name or its place)."""
    for note in reversed(log.notes):
        head, _, tail = note.partition(" of ?")
        if not tail and head.startswith("rank ") and head[5:].isdigit():
            return int(head[5:])
    return None
