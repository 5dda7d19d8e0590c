"""Which earlier graph a recompile is compared with, and that diff (the candidates, the screen and
the choice: docs/report.md, "Which earlier graph a recompile is compared with"; the choice itself
is `diagnose.closeness`'s)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.closeness import Compared, closest_of, measure
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS, Context
from xlagraph.diagnose.frames import call_site, is_library, user_frames
from xlagraph.diagnose.new_code import GENERIC_NAMES, NEW_CALL_SITE, NEW_SYNC_POINT
from xlagraph.diff import DiffResult, canonical_of, diff_modules
from xlagraph.ir import Module
from xlagraph.match.correspondence import correspond
from xlagraph.parse.shared import current as current_shared
from xlagraph.report.modules import Modules
from xlagraph.runlog import LiveTensor, Sync

__all__ = [
    "MAX_CANDIDATES",
    "RunFacts",
    "choose_baseline",
    "closest",
    "diff_against",
    "graph_name",
    "prepare_baseline",
]

MAX_CANDIDATES = 5


@dataclass(frozen=True)
class RunFacts:
    """What the capture knows of the run beside its graphs, built once per recompile: each sync's
    trigger, the first sync's index, step -> the sync by which torch.compile's bridge synced all
    pending work (`triggers.bridge_synced`), the live tensors before the target's sync
    (`Context.tensors`) and step -> its first implicit sync (`implicit_cuts`)."""

    triggers: Mapping[int, str] = field(default_factory=dict)
    first_sync: int = 0
    bridged: Mapping[int, int] = field(default_factory=dict)
    tensors: tuple[LiveTensor, ...] = ()
    cuts: Mapping[int, tuple[int, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Choice:
    graph_hash: str
    sync: Sync
    result: DiffResult | None
    reason: str
    compared: tuple[Compared, ...] = ()  # every candidate diffed in full, the chosen one included


# Candidates diffed in full after screening: a 20-variant run of 100K-instruction graphs would
# otherwise run up to five whole diffs per recompile; one more where the screen ties or comes close.
_SCREENED = 2
_EXTRA = 1


def _screen(readable: list[tuple[str, Sync]], this: Module, modules: Modules) -> list[tuple[str, Sync]]:
    """The candidates closest to `this` by a cheap measure of what `closest_of` reads: how many of
    the entries' instructions have no structural twin (`h0`) on the other side; the full diff then
    decides between the two closest and a third as close as the second (within a tenth, where
    they share most of their structure): the measure cannot tell graphs that take turns apart (a
    reordering keeps every `h0`), so a tie is no reason to drop one."""
    if len(readable) <= _SCREENED:
        return readable
    mine = canonical_of(this).entry
    distance: list[int] = []
    for h, _ in readable:
        base = modules.get(h)
        assert isinstance(base, Module)
        distance.append(_h0_distance(mine, canonical_of(base).entry))
    return [readable[k] for k in closest(distance, len(mine.h0))]


def closest(distance: Sequence[int], size: int) -> list[int]:
    """Which candidates (by their place, most recent first) `_screen` keeps for a graph of `size`
    instructions: the two closest (on a tie, the most recent), and a third as close as the second
    or within a tenth of it (the closest such, then the most recent) where the second shares most
    of this graph's structure: there a tie means the screen cannot tell, and one more diff can.
    Where even the second shares little (a shape that reaches every instruction: bench_report's
    20 variants of 92K instructions all tie at 112K), the full diffs would name the same change
    at a second each."""
    order = sorted(range(len(distance)), key=lambda k: (distance[k], k))
    if len(order) <= _SCREENED:
        return sorted(order)
    cut = distance[order[_SCREENED - 1]]
    near = [k for k in order[_SCREENED:] if distance[k] <= cut + cut // 10] if 2 * cut < size else []
    return sorted(order[:_SCREENED] + near[:_EXTRA])


def _h0_distance(a: CanonicalComputation, b: CanonicalComputation) -> int:
    """Instructions of either side without a structural twin on the other, as multisets: by
    the compiled core, a merge of sorted hashes (tests/test_core_handle.py holds it to counting
    them)."""
    return a.core.h0_distance(b.core)  # type: ignore[attr-defined]


def _candidates(target: Sync, earlier: list[tuple[str, Sync]]) -> tuple[list[tuple[str, Sync]], str]:
    """Earlier graphs from the same call site, most recent first, and how they were chosen."""
    frames = user_frames(target.frames)
    site = call_site(target.frames)
    same = [e for e in earlier if frames and user_frames(e[1].frames) == frames]
    point = _sync_point(target)
    if point and same:
        at_point = [e for e in same if _sync_point(e[1]) == point]
        if not at_point:
            return list(reversed(same)), NEW_SYNC_POINT
        same = at_point
    tiers = (
        (same, "same call site"),
        ([e for e in earlier if site and call_site(e[1].frames) == site], "same line, other callers"),
        (earlier, NEW_CALL_SITE),
    )
    for group, reason in tiers:
        if group:
            return list(reversed(group)), reason
    return [], ""


def _sync_point(sync: Sync) -> str:
    """`file:line` of the innermost frame when the sync happened inside library code, else ""."""
    if not sync.frames:
        return ""
    inner = sync.frames[0]
    return f"{inner.file}:{inner.line}" if is_library(inner) else ""


def _context(
    target: Sync, candidate: Sync, run: RunFacts, earlier: Sequence[tuple[str, Sync]] = ()
) -> Context:
    """What the capture knows about the two graphs, for the recognizers."""
    site = call_site(candidate.frames)
    triggers, bridged = run.triggers, run.bridged
    return Context(
        trigger=triggers.get(target.index, ""),
        baseline_trigger=triggers.get(candidate.index, ""),
        call_site=call_site(target.frames),
        baseline_call_site=call_site(candidate.frames),
        step=target.step,
        baseline_step=candidate.step,
        first_graph=candidate.index == run.first_sync,
        first_at_site=not any(e.index < candidate.index and call_site(e.frames) == site for _, e in earlier),
        bridge_synced=_after_bridge_sync(target, bridged),
        # Only the warm-up's own difference: every step between the two ran the bridge's sync too
        # (a later step without it that compiled nothing new here has the graph the target has).
        baseline_bridged=_after_bridge_sync(candidate, bridged)
        and all(s in bridged for s in range(candidate.step + 1, target.step)),
        host_reads=tuple(
            dict.fromkeys(
                line
                for s in (*(e for _, e in earlier), target)
                if triggers.get(s.index, "") in IMPLICIT_TRIGGERS and (line := call_site(s.frames))
            )
        ),
        tensors=run.tensors,
        cut_before=_cut_before(target, run.cuts),
        baseline_cut_before=_cut_before(candidate, run.cuts),
        step_cuts=_step_cuts(target, run, earlier),
        baseline_step_cuts=_step_cuts(candidate, run, earlier),
    )


def _step_cuts(sync: Sync, run: RunFacts, earlier: Sequence[tuple[str, Sync]]) -> tuple[str, ...]:
    """The user's lines of the implicit syncs earlier in `sync`'s step: its first cut, and those
    of the graphs compiled before it in that step (a fallback op's sync inside a branch)."""
    first = _cut_before(sync, run.cuts)
    lines = (
        line
        for _, e in earlier
        if e.step == sync.step
        and e.index < sync.index
        and run.triggers.get(e.index, "") in IMPLICIT_TRIGGERS
        and (line := call_site(e.frames))
    )
    return tuple(dict.fromkeys([first, *lines] if first else lines))


def implicit_cuts(syncs: Sequence[Sync], triggers: Mapping[int, str]) -> dict[int, tuple[int, str]]:
    """Step -> (the index, the user's line) of its first sync that an implicit sync made (a value
    read on the host, a checkpoint's transfer): the step's ops up to then ran in that graph."""
    out: dict[int, tuple[int, str]] = {}
    for s in syncs:
        implicit = triggers.get(s.index, "") in IMPLICIT_TRIGGERS
        if s.step not in out and implicit and (line := call_site(s.frames)):
            out[s.step] = (s.index, line)
    return out


def _cut_before(sync: Sync, cuts: Mapping[int, tuple[int, str]]) -> str:
    at = cuts.get(sync.step)
    return at[1] if at is not None and at[0] < sync.index else ""


def _after_bridge_sync(sync: Sync, bridged: Mapping[int, int]) -> bool:
    at = bridged.get(sync.step)
    return at is not None and at < sync.index


def graph_name(module: object) -> str:
    """`step_clear_pending` of `HloModule step_clear_pending.60`: the name `torch_xla.compile` gave."""
    name = getattr(module, "name", "") if isinstance(module, Module) else ""
    base, _, suffix = name.rpartition(".")
    return base if suffix.isdigit() else name


def _same_name(
    this: object, ordered: list[tuple[str, Sync]], reason: str, modules: Modules
) -> tuple[list[tuple[str, Sync]], str]:
    """Candidates whose graph `torch_xla.compile` named the same: one call compiles the ops pending
    before it (`<name>_clear_pending`) and the function (`<name>`) from one Python line, and those
    are two programs, not one changed. No candidate of that name: new code."""
    name = graph_name(this)
    if name in GENERIC_NAMES:
        return ordered, reason
    same = [(h, s) for h, s in ordered if graph_name(modules.get(h)) == name]
    if same:
        return same, reason
    return ordered, NEW_CALL_SITE


def choose_baseline(
    target: Sync, earlier: list[tuple[str, Sync]], modules: Modules, run: RunFacts = RunFacts()
) -> tuple[_Choice | None, str]:
    """The baseline and its diff, or a note saying why there is no diff. Within `sharing()`,
    made once per distinct content (the same graphs and sync facts in another process)."""
    shared = current_shared()
    key = _choice_key(target, earlier, modules, run) if shared else None
    if shared is None or key is None:
        return _choose_baseline(target, earlier, modules, run)
    if key in shared.choices:
        shared.hits += 1
        at, result, reason, note, counted = shared.choices[key]
        if at is None:
            return None, note
        h, s = earlier[at]
        compared = tuple(Compared(*earlier[i], *rest) for i, *rest in counted)
        return _Choice(h, s, result, reason, compared), note
    choice, note = _choose_baseline(target, earlier, modules, run)
    if choice is None and note == _NO_EARLIER:
        shared.choices[key] = (None, None, "", note, ())
    elif choice is not None and not note and not modules.noted:  # what names a file is never shared
        at = _index_in(earlier, choice.graph_hash, choice.sync)
        counted = tuple((_index_in(earlier, c.graph_hash, c.sync), *_counts(c)) for c in choice.compared)
        shared.choices[key] = (at, choice.result, choice.reason, note, counted)
    return choice, note


def _counts(c: Compared) -> tuple[int, int, bool, bool]:
    return c.involved, c.causes, c.warm_up, c.reorder


def _index_in(earlier: list[tuple[str, Sync]], graph_hash: str, sync: Sync) -> int:
    """Where a candidate is in `earlier`: another process's list holds the same graphs there."""
    return next(i for i, (h, s) in enumerate(earlier) if h == graph_hash and s is sync)


def _choice_key(
    target: Sync, earlier: list[tuple[str, Sync]], modules: Modules, run: RunFacts
) -> Hashable | None:
    """Everything `_choose_baseline` reads: the graphs by content, and of each sync its index,
    step, frames, trigger and whether the bridge synced before it in its step (not its times).
    None when a graph cannot be told by content."""
    keys = [modules.key(h) for h in (target.graph_hash, *(h for h, _ in earlier))]
    if any(k is None for k in keys):
        return None
    syncs = (target, *(s for _, s in earlier))
    facts = tuple(
        (
            s.index,
            s.step,
            s.frames,
            run.triggers.get(s.index, ""),
            _after_bridge_sync(s, run.bridged),
            _cut_before(s, run.cuts),
        )
        for s in syncs
    )
    # what the recognizers read of the live tensors: ids only as an order (each process has its own)
    live = tuple((t.shape, t.frames, t.holders, t.pending) for t in sorted(run.tensors, key=lambda t: -t.id))
    return (tuple(keys), facts, run.first_sync, live)


_NO_EARLIER = "no earlier graph to compare with"


def _choose_baseline(
    target: Sync, earlier: list[tuple[str, Sync]], modules: Modules, run: RunFacts
) -> tuple[_Choice | None, str]:
    ordered, reason = _candidates(target, earlier)
    if not ordered:
        return None, _NO_EARLIER
    this = modules.get(target.graph_hash)
    ordered, reason = _same_name(this, ordered, reason, modules)
    if isinstance(this, str):
        h, s = ordered[0]
        return _Choice(h, s, None, reason), f"cannot explain this graph: {this}"
    readable = _readable(ordered, modules)
    if not readable:
        h, s = ordered[0]
        why = f"cannot explain this graph: the baseline's HLO is missing ({modules.get(h)})"
        return _Choice(h, s, None, reason), why
    readable = _screen(readable, this, modules)
    results: list[tuple[Compared, DiffResult]] = []
    failures: list[str] = []
    for h, s in readable:
        base = modules.get(h)
        assert isinstance(base, Module)
        try:
            context = _context(target, s, run, earlier)
            result = diff_modules(base, this, context)
        except RecursionError:
            failures.append(f"graph {h}: nested too deeply to compare")
            continue
        results.append((measure(h, s, result.differences), result))
    if not results:
        h, s = readable[0]
        return _Choice(h, s, None, reason), "cannot explain this graph: " + "; ".join(failures)
    counted = tuple(c for c, _ in results)
    best, result = results[closest_of(counted)]
    return _Choice(best.graph_hash, best.sync, result, reason, counted), ""


def _readable(ordered: list[tuple[str, Sync]], modules: Modules) -> list[tuple[str, Sync]]:
    """The first readable candidates only: a graph past them would be parsed (and kept) for
    nothing."""
    found = ((h, s) for h, s in ordered if isinstance(modules.get(h), Module))
    return list(islice(found, MAX_CANDIDATES))


def prepare_baseline(target: Sync, earlier: list[tuple[str, Sync]], modules: Modules) -> None:
    """Start `choose_baseline`'s work for `target` early: the correspondence of its graph's entry
    with each candidate's that the screen keeps (kept on the computations, `correspond`), with
    the core's per-graph work under it (refinement graphs and runs, kept on each graph). A report
    does this before its workers fork, for a recompile whose candidates both workers compare
    against: each would otherwise build and refine those graphs alike. Answers nothing: a graph
    that cannot be read or compared is left for `choose_baseline` to say so where it would."""
    ordered, reason = _candidates(target, earlier)
    this = modules.get(target.graph_hash) if ordered else None
    if not isinstance(this, Module):
        return
    ordered, _ = _same_name(this, ordered, reason, modules)
    try:
        entry = canonical_of(this).entry
        for h, _ in _screen(_readable(ordered, modules), this, modules):
            base = modules.get(h)
            assert isinstance(base, Module)
            correspond(canonical_of(base).entry, entry)
    except RecursionError:  # the diff says "nested too deeply" where it would
        return


def diff_against(
    target: Sync, against: Sync, modules: Modules, run: RunFacts, earlier: Sequence[tuple[str, Sync]] = ()
) -> DiffResult | str:
    """`target`'s graph diffed against `against`'s, with what the capture knows about both (as a
    baseline's diff is), or why it cannot be."""
    base, this = modules.get(against.graph_hash), modules.get(target.graph_hash)
    for module in (base, this):
        if isinstance(module, str):
            return f"cannot compare: {module}"
    assert isinstance(base, Module) and isinstance(this, Module)
    try:
        context = _context(target, against, run, earlier)
        return diff_modules(base, this, context)
    except RecursionError:
        return "cannot compare: nested too deeply"


def graphs_read(target: Sync, earlier: list[tuple[str, Sync]]) -> list[str]:
    """The graphs `choose_baseline` reads first for `target`: its own and its nearest candidates
    (before `_same_name`, which reads graphs to filter them: one read here that the choice then
    passes over is only read early). Reads nothing."""
    ordered, _ = _candidates(target, earlier)
    return [target.graph_hash, *(h for h, _ in ordered[:MAX_CANDIDATES])] if ordered else []


# -- the report ----------------------------------------------------------------------------
