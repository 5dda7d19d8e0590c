"""`build_report`: a `RunLog` in, a `RunReport` out.

The run's variants, timeline, warm-up and steady state; every compile after the first explained
against a baseline (`explain.py`, on several processes: `explain_workers.py`); the recompiles
ranked by call site and by cause, what the user must fix first at the top.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path, PurePath

from xlagraph._gc import paused_gc
from xlagraph.capture.shardings import read_mark_shardings
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS
from xlagraph.diagnose.findings import step_breaks
from xlagraph.diagnose.frames import SourceText, call_site, reading_sources, source_line, user_frames
from xlagraph.dynamolog import DynamoLog
from xlagraph.graphs import variant_letter
from xlagraph.parse.shared import current as current_shared
from xlagraph.progress import counted
from xlagraph.report.explain import ReportRun, explain_recompile
from xlagraph.report.explain_workers import explain_in_processes, report_workers
from xlagraph.report.model import (
    RankingEntry,
    Recompile,
    RunReport,
    SteadyTurns,
    TimelineEntry,
    Turn,
    Variant,
)
from xlagraph.report.modules import Modules
from xlagraph.report.source_text import source_text_near
from xlagraph.report.triggers import LineReader, trigger_of
from xlagraph.report.turns import diff_turn, steady_turns, turn_pairs
from xlagraph.runlog import RunLog, Sync

__all__ = ["build_report", "source_text_of"]


def _steady_from(syncs: tuple[Sync, ...], dynamo: DynamoLog | None = None) -> int | None:
    """The first step after the last compile: torch_xla's, or torch.compile's (a retrace whose
    graphs XLA had cached still runs the bridge's warm-up graphs again in its step)."""
    compiled = [s.step for s in syncs if s.compiled]
    if dynamo is not None:
        compiled += [
            c.end_step if c.end_step is not None else c.step for c in dynamo.compiles if c.step is not None
        ]
    if not syncs:
        return None
    start = (max(compiled) + 1) if compiled else syncs[0].step
    return start if any(s.step >= start for s in syncs) else None


_EXPLICIT = frozenset({"sync", "mark_step", "torch_xla.compile"})


def _side_steps(syncs: tuple[Sync, ...]) -> int:
    """Steps of the source that are no training step: every explicit sync in them is at another
    line than the loop's own step marker (an evaluation pass or a checkpoint synced in the loop,
    `xm.mark_step()` in `validate()`). The loop's marker is the line most explicit syncs come from;
    a first step is never one (nothing ran before it to be a step of)."""
    explicit = [(s, call_site(s.frames)) for s in syncs if trigger_of(s) in _EXPLICIT]
    sites = Counter(site for _, site in explicit)
    if len(sites) < 2:
        return 0
    main = sites.most_common(1)[0][0]
    marked: dict[int, bool] = {}  # step -> has an explicit sync at the loop's marker
    for s, site in explicit:
        marked[s.step] = marked.get(s.step, False) or site == main
    first = min(marked, default=0)
    return sum(1 for step, at_main in marked.items() if not at_main and step != first)


def _expected_kind(r: Recompile, kind: str) -> bool:
    """Every cause of `kind` in `r` is an expected change (a warm-up beside a real cause too)."""
    return any(str(c.kind) == kind for c in r.causes) and all(c.info for c in r.causes if str(c.kind) == kind)


def _ranking(
    recompiles: tuple[Recompile, ...],
    keys: Callable[[Recompile], Iterable[str]],
    expected_as: Callable[[Recompile, str], bool] = lambda r, _: r.expected,
) -> tuple[RankingEntry, ...]:
    table: dict[str, tuple[int, float, list[str], bool]] = {}
    for r in recompiles:
        for key in dict.fromkeys(keys(r)):
            n, sec, letters, expected = table.get(key, (0, 0.0, [], True))
            table[key] = (
                n + 1,
                sec + r.compile_seconds,
                [*letters, r.variant],
                expected and expected_as(r, key),
            )
    entries = [RankingEntry(k, n, sec, tuple(v), e) for k, (n, sec, v, e) in table.items()]
    # What the user must fix first: a key whose every recompile is expected (warm-up) goes last.
    entries.sort(key=lambda e: (e.expected, -e.compiles, -e.seconds, e.key))
    return tuple(entries)


def build_report(log: RunLog, explain: bool = True, read_line: LineReader = source_line) -> RunReport:
    """The report of one process: variants, timeline, warm-up, every recompile explained, ranking.

    With `explain=False` no graph is parsed or compared: recompiles carry no baseline and no
    causes (what `check` needs before it knows the run failed). `read_line(file, line)` reads a
    source line, to tell `.item()` from `print`; `source_line` unless a test passes another. Source
    text comes from the capture's stored sources (`source_text_of`), never from installed packages.
    """
    with reading_sources(source_text_of(log)):
        return _build_report(log, explain, read_line)


def source_text_of(log: RunLog) -> SourceText:
    """Where a run's source lines are read: a capture's stored sources; without them (a raw dump,
    a capture made before sources were stored) `source_text_near` the source."""
    if log.kind == "capture":
        from xlagraph.capture.stored_sources import StoredSources

        stored = StoredSources.load(log.source)
        if stored is not None:
            return SourceText(stored=stored)
    return source_text_near([log.source] if log.source else [])


def _build_report(log: RunLog, explain: bool, read_line: LineReader) -> RunReport:
    syncs = log.syncs
    letters: dict[str, str] = {}
    first: dict[str, Sync] = {}
    counts: dict[str, int] = {}
    compiled_hashes: dict[str, Sync] = {}
    recompiled_again: list[str] = []
    for s in syncs:
        if s.graph_hash not in letters:
            letters[s.graph_hash] = variant_letter(len(letters))
            first[s.graph_hash] = s
        counts[s.graph_hash] = counts.get(s.graph_hash, 0) + 1
        if s.compiled:
            if s.graph_hash in compiled_hashes:
                recompiled_again.append(
                    f"graph {letters[s.graph_hash]} compiled again at sync {s.index} (step {s.step}): "
                    "another device or thread of this process compiled it too, or the cache evicted it"
                )
            else:
                compiled_hashes[s.graph_hash] = s
    steady_from = _steady_from(syncs, log.dynamo)
    triggers = {s.index: trigger_of(s, read_line) for s in syncs}
    timeline = tuple(
        TimelineEntry(
            s.index,
            s.step,
            letters[s.graph_hash],
            s.compiled,
            triggers[s.index],
            call_site(s.frames),
            "steady" if steady_from is not None and s.step >= steady_from else "warm-up",
            s.compile_seconds,
        )
        for s in syncs
    )
    variants = tuple(
        Variant(
            letters[h],
            h,
            first[h].index,
            first[h].step,
            counts[h],
            h in compiled_hashes,
            call_site(first[h].frames),
            log.graphs[h].module if h in log.graphs else "",
        )
        for h in letters
    )
    user_names = frozenset(_file_name(f.file) for s in syncs for f in user_frames(s.frames)) | frozenset(
        _file_name(f.file) for g in log.graphs.values() for t in g.tensors for f in user_frames(t.frames)
    )
    modules = Modules(log.graphs)
    marks = read_mark_shardings(log.source) if explain and Path(log.source).is_dir() else ()
    # The last explicit sync (a step marker): an implicit one after it reads a value after the loop.
    last_marker = max((s.index for s in syncs if triggers[s.index] not in IMPLICIT_TRIGGERS), default=-1)
    run = ReportRun(
        letters,
        first,
        modules if explain else None,
        log,
        triggers,
        user_names,
        read_line,
        marks,
        last_marker,
        max((s.step for s in syncs), default=-1),
    )
    targets = list(compiled_hashes.values())[1:]
    # Several processes of one report share their baseline choices: each is explained alone.
    shared = current_shared()
    alone = shared is None or shared.processes == 1
    workers = min(report_workers(), len(targets)) if explain and alone else 1
    # The collector paused over all the recompiles (the workers forked inside inherit the pause):
    # resumed between diffs it scanned each graph just read and the diffs' tables again and
    # again (3 to 4% of the report's CPU), where the diffs leave next to no cycles to collect
    # (a few hundred objects in a report of 20 large graphs).
    with paused_gc():
        if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
            explained = explain_in_processes(targets, run, workers)
        else:
            explained = tuple(explain_recompile(s, run) for s in counted("recompile", targets))
    recompiles = tuple(r for r in explained if not r.first_of_program)
    compiles = len(compiled_hashes)
    warnings = list(recompiled_again)
    if log.compiles_reported is not None and log.compiles_reported != compiles:
        warnings.append(
            f"torch_xla counted {log.compiles_reported} compile(s) (CompileTime) but the recorded syncs "
            f"show {compiles} distinct compiled graph(s)"
            + (
                ": ops that ran on the CPU compile graphs of their own (see the notes)"
                if any(n.startswith("aten ops ran on the CPU") for n in log.notes)
                else ""
            )
        )
    steady_variants = tuple(dict.fromkeys(e.variant for e in timeline if e.phase == "steady"))
    per_step: dict[int, list[str]] = {}
    for e in timeline:
        if e.phase == "steady":
            per_step.setdefault(e.step, []).append(e.variant)
    # several graphs, the same ones in the same order every step (a step cut by graph breaks or
    # syncs): not variants taking turns. The run's last step may hold only the start of one (a
    # value printed after the loop's last step marker).
    orders = [tuple(per_step[k]) for k in sorted(per_step)]
    if len(orders) > 2 and orders[-1] != orders[-2] and orders[-2][: len(orders[-1])] == orders[-1]:
        orders.pop()
    steady_each_step = len(steady_variants) > 1 and len(set(orders)) == 1
    steps = len(log.steps) if log.steps else len({s.step for s in syncs})
    side_steps = _side_steps(syncs)
    dynamo = None
    if log.dynamo is not None:
        from xlagraph.diagnose.bridge import bridge_synced
        from xlagraph.report.dynamo import dynamo_section, joined

        last = [t for t in timeline if t.step == timeline[-1].step] if timeline else []
        dynamo = dynamo_section(log.dynamo, variants, syncs, len(last) or None)
        inputs = {c.compile_id: c.graph_inputs for c in log.dynamo.compiles if c.graph_inputs is not None}
        explained, dynamo = joined(explained, dynamo, timeline, frozenset(bridge_synced(syncs)), inputs)
        recompiles = tuple(r for r in explained if not r.first_of_program)
    # After torch.compile's half: a graph it compiled for another mode takes turns as expected.
    turns = None
    if explain and len(steady_variants) > 1 and not steady_each_step:
        turns = _turns(timeline, recompiles, run)
    from xlagraph.report.eager import eager_section

    return RunReport(
        eager=eager_section(log),
        dynamo=dynamo,
        source=log.source,
        kind=log.kind,
        process=log.process,
        compiles=compiles,
        compiles_reported=log.compiles_reported,
        syncs=len(syncs),
        steps=steps - side_steps,
        side_steps=side_steps,
        variants=variants,
        timeline=timeline,
        steady_from_step=steady_from,
        steady_variants=steady_variants,
        steady_each_step=steady_each_step,
        steady_turns=turns,
        recompiles=recompiles,
        by_call_site=_ranking(recompiles, lambda r: [r.call_site or "(no frames)"]),
        by_cause=_ranking(recompiles, lambda r: r.kinds or ["unexplained"], _expected_kind),
        compile_seconds=sum(s.compile_seconds for s in syncs if s.compiled),
        notes=log.notes,
        warnings=tuple(warnings),
        first_compiles=tuple(r for r in explained if r.first_of_program),
        findings=step_breaks(tuple(timeline)),
    )


def _turns(
    timeline: tuple[TimelineEntry, ...], recompiles: tuple[Recompile, ...], run: ReportRun
) -> SteadyTurns | None:
    """The steady state's graphs taking turns, each against the one before it (`turns.py`)."""
    first_of = {run.letters[h]: s for h, s in run.first.items()}
    pairs = turn_pairs(timeline, {v: s.index for v, s in first_of.items()})

    def diff(variant: str, against: str) -> Turn:
        return diff_turn(first_of[variant], first_of[against], run)

    return steady_turns(pairs, recompiles, diff)


@lru_cache(maxsize=16384)
def _file_name(file: str) -> str:
    return PurePath(file).name
