"""The rank x step strip and the first step where ranks ran different graphs, diffed: `rank_view`."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from xlagraph.diagnose.causes import with_sides
from xlagraph.diagnose.evidence import NO_CONTEXT, Context
from xlagraph.errors import XlagraphError
from xlagraph.graphs import variant_letter
from xlagraph.ir import Module
from xlagraph.report.ranks.collectives import first_mismatch
from xlagraph.report.ranks.model import (
    ModuleLoader,
    RankDiff,
    RankDivergence,
    RankGroup,
    RankView,
    describe_ranks,
    group_ranks,
)
from xlagraph.report.ranks.sources import DUMP_DIR_NOTE, rank_of, world_of
from xlagraph.runlog import LiveTensor, RunLog, Sync

MAX_GROUPS_DIFFED = 3  # rank groups whose graphs are diffed against the baseline group


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
                    letters[h] = variant_letter(len(letters))
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
    divergence = _divergence(ranks, per_rank, letters, specs, last, load, runs)
    mismatch, compared = (None, 0)
    if divergence is not None and unit == "compile":
        notes.append("collectives not compared: a compile-only view cannot tell which graphs each rank ran")
    elif divergence is not None:
        mismatch, compared = first_mismatch(
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
        world=world_of(runs),
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


def _divergence(
    ranks: tuple[int, ...],
    per_rank: list[dict[int, tuple[str, ...]]],
    letters: dict[str, str],
    specs: dict[str, str],
    last: int,
    load: ModuleLoader,
    runs: Sequence[RunLog] = (),
) -> RankDivergence | None:
    for step in range(last + 1):
        rows = [steps.get(step) for steps in per_rank]
        if len(set(rows)) == 1:
            continue
        grouped = group_ranks(ranks, rows)
        groups = tuple(
            RankGroup(tuple(rs), tuple(letters[h] for h in row) if row is not None else ())
            for rs, row in grouped
        )
        base = grouped[0][1] or ()
        diffs = []
        logs = dict(zip(ranks, runs, strict=False))
        for gi, (rs, row) in enumerate(grouped[1 : 1 + MAX_GROUPS_DIFFED], 1):
            pair = _first_pair(base, row or ())
            if pair is None:
                continue
            a, b = pair
            context = _context(logs.get(grouped[0][0][0]), a, logs.get(rs[0]), b, step)
            # the divergent rank's stored sources: the rules that read the user's code (an `if`
            # around the lines, what a line reads) read them, as its own report does
            with _sources_of(logs.get(rs[0])):
                causes, note = _diff(specs.get(a, ""), specs.get(b, ""), load, context)
            causes = tuple(with_sides(c, letters[a], letters[b]) for c in causes)
            diffs.append(RankDiff(gi, letters[a], letters[b], causes, note))
        return RankDivergence(step, groups, tuple(diffs))
    return None


def _sources_of(log: RunLog | None) -> AbstractContextManager[object]:
    from xlagraph.diagnose.frames import reading_sources
    from xlagraph.report.build import source_text_of

    return reading_sources(source_text_of(log)) if log is not None else nullcontext()


def _first_pair(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, str] | None:
    """The first position where two steps ran different graphs (the last graph of the shorter
    step when one is a prefix of the other)."""
    for x, y in zip(a, b, strict=False):
        if x != y:
            return x, y
    if a and b and a[-1] != b[-1]:
        return a[-1], b[-1]
    return None


def _context(base: RunLog | None, a: str, other: RunLog | None, b: str, step: int) -> Context:
    """What each rank's capture knows of the two graphs' syncs at the divergent step (the trigger and
    the user's line), as a recompile's diff has it: a rank's `.item()` cut is said at its line; and
    each rank's live tensors before its sync, where the user's code issued its collectives."""
    from xlagraph.diagnose.frames import call_site
    from xlagraph.report.triggers import trigger_of

    def sync(log: RunLog | None, h: str) -> Sync | None:
        return next((s for s in log.syncs if s.step == step and s.graph_hash == h), None) if log else None

    def tensors(log: RunLog | None, h: str) -> tuple[LiveTensor, ...]:
        record = log.graphs.get(h) if log else None
        return record.tensors if record else ()

    sa, sb = sync(base, a), sync(other, b)
    if sa is None or sb is None:
        return NO_CONTEXT
    return Context(
        trigger=trigger_of(sb),
        baseline_trigger=trigger_of(sa),
        call_site=call_site(sb.frames),
        baseline_call_site=call_site(sa.frames),
        step=step,
        baseline_step=step,
        tensors=tensors(other, b),
        baseline_tensors=tensors(base, a),
    )


def _diff(
    spec_a: str, spec_b: str, load: ModuleLoader, context: Context = NO_CONTEXT
) -> tuple[tuple[Any, ...], str]:
    if not spec_a or not spec_b:
        return (), "the HLO of one of the graphs was not kept: no diff"
    try:
        from xlagraph.diff import diff_modules

        result = diff_modules(load(spec_a), load(spec_b), context)
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
