"""torch.compile's half of a report: each dynamo compile in the user's terms, joined to the XLA
graphs it added.

A recompile is said as dynamo's guard failure means it ("torch.compile traced `forward`
(train.py:10) again: input `x`'s dimension 0 changed 8 -> 11"), with dynamo's own text beside it,
then the XLA graphs compiled for it (the variants first run in the same step at or after the
compile began, before the next compile), and what it cost (dynamo's trace and the backend's compile,
plus XLA's compile of those graphs). Graph breaks are grouped by reason and line; the cost of
compiles is ranked per user call site. Works for any backend: without XLA graphs (inductor,
aot_eager, a plain TORCH_TRACE), the XLA half is simply empty.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace

from xlagraph.diagnose.dynamo_join import join
from xlagraph.diagnose.dynamo_join.breaks import break_fix
from xlagraph.diagnose.dynamo_join.expected import switched_compiles
from xlagraph.diagnose.dynamo_join.guards import (
    call_site,
    compile_fix,
    compile_kind,
    guard_failures,
    is_expected,
    user_line,
)
from xlagraph.diagnose.dynamo_join.owners import owners
from xlagraph.diagnose.dynamo_join.retrace import GuardFailure, Retrace
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.frames import is_library
from xlagraph.dynamolog import DynamoCompile, DynamoLog, GraphBreak
from xlagraph.ir import Frame
from xlagraph.report.model import (
    DynamoEvent,
    DynamoSection,
    GraphBreakEntry,
    RankingEntry,
    Recompile,
    TimelineEntry,
    Variant,
)
from xlagraph.runlog import Sync

__all__ = ["dynamo_section", "joined", "user_function"]

_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")


def user_function(c: DynamoCompile) -> str:
    """The user's name of the compiled frame: a resume function (the code after a graph break) is
    named as the function it resumes; torch's own wrapper of a compiled module (`inner` in
    torch/_dynamo) as the call it wraps."""
    m = _RESUME.match(c.function)
    if m:
        return f"{m['fn']} (after the graph break at line {m['line']})"
    if c.file and is_library(Frame(c.function, c.file, c.line)) and c.file.startswith("torch/"):
        site = call_site(c)
        return f"the compiled call at {site}" if site != c.code else c.function
    return c.function


def _summary(c: DynamoCompile, guards: tuple[GuardFailure, ...], fn: str) -> str:
    name = fn if fn.startswith("the compiled call") else f"`{fn}` ({c.code})"
    if c.hit_limit:
        return f"torch.compile gave up on {name}: recompile limit reached, it runs eagerly from here on"
    if not c.recompile:
        return f"torch.compile traced {name}"
    what = guards[0].phrase if guards else "dynamo gave no reason"
    return f"torch.compile traced {name} again: {what}"


def dynamo_section(
    log: DynamoLog, variants: Sequence[Variant], syncs: Sequence[Sync], steady_syncs_per_step: int | None
) -> DynamoSection:
    compiles = log.compiles
    owned = owners(compiles, variants)
    xla_seconds = {s.graph_hash: s.compile_seconds for s in syncs if s.compiled}
    events: list[DynamoEvent] = []
    files = tuple(dict.fromkeys(c.file for c in compiles if c.file))
    for c in compiles:
        fn = user_function(c)
        guards = guard_failures(c, files)
        added = owned.get(c.compile_id, [])
        xla = sum(xla_seconds.get(v.graph_hash, 0.0) for v in added)
        events.append(
            DynamoEvent(
                compile_id=c.compile_id,
                kind=compile_kind(c),
                function=fn,
                code=c.code,
                call_site=call_site(c),
                step=c.step,
                sync=c.sync,
                summary=_summary(c, guards, fn),
                guards=guards,
                breaks=tuple(f"{b.reason} at {b.at}" for b in c.graph_breaks),
                seconds=round(c.seconds + c.backward_seconds, 6),
                backend_seconds=round(c.backend_seconds, 6),
                xla_seconds=round(xla, 6),
                variants=tuple(v.letter for v in added),
                fix=compile_fix(c, guards),
                expected=is_expected(c, guards, compiles),
                graph_ops=c.graph_ops,
                failure=f"{c.fail_type}: {c.fail_reason}".strip(": ") if c.fail_type or c.fail_reason else "",
            )
        )
    breaks = _breaks(log.graph_breaks, steady_syncs_per_step)
    recompiles = tuple(e for e in events if e.kind != "first")
    return DynamoSection(
        source=log.source,
        frames=len({c.frame_id for c in compiles}),
        compiles=len(compiles),
        events=tuple(events),
        recompiles=recompiles,
        graph_breaks=breaks,
        by_call_site=_ranking(events),
        seconds=round(sum(e.seconds for e in events), 6),
        notes=log.notes,
    )


def joined(
    recompiles: Sequence[Recompile],
    section: DynamoSection,
    timeline: Sequence[TimelineEntry],
    bridged: frozenset[int] = frozenset(),
    inputs: Mapping[str, int] | None = None,
) -> tuple[tuple[Recompile, ...], DynamoSection]:
    """The recompiles joined to torch.compile's half: each graph said with the compile that made it;
    and the section, where a retrace for another mode that switched it for good is no longer
    expected (`switched_compiles`: the XLA graphs say so, the retrace says it alike). `inputs`: the
    inputs of dynamo's graph by compile id (`graph_input_count`), where the log says them."""
    inputs = inputs or {}
    made = {v: e.compile_id for e in section.events for v in e.variants}
    retraces = {
        e.compile_id: Retrace(
            e.guards[0],
            e.function,
            e.call_site,
            e.expected,
            e.breaks,
            getattr(_before(e, section.events), "breaks", ()),  # (None: the frame's first compile)
            _inputs_added(e, section.events, inputs),
        )
        for e in section.events
        if e.kind == "recompile" and e.guards
    }
    phases: dict[str, set[str]] = defaultdict(set)
    last_run: dict[str, int] = {}
    steps: dict[int, tuple[str, ...]] = {}
    for t in timeline:
        steps[t.step] = (*steps.get(t.step, ()), t.variant)
        phases[t.variant].add(t.phase)
        last_run[t.variant] = max(last_run.get(t.variant, t.sync), t.sync)
    recompiles = [replace(r, dynamo=made.get(r.variant, "")) for r in recompiles]
    switched = switched_compiles(recompiles, retraces, last_run)
    if switched:
        events = tuple(
            replace(e, expected=False, fix=fix_text(switched[e.compile_id]))
            if e.compile_id in switched
            else e
            for e in section.events
        )
        section = replace(section, events=events, recompiles=tuple(e for e in events if e.kind != "first"))
    return join(recompiles, retraces, phases, last_run, steps, bridged, made), section


def _inputs_added(event: DynamoEvent, events: Sequence[DynamoEvent], inputs: Mapping[str, int]) -> int:
    """How many more inputs dynamo's graph of `event` reads than that of the cache entry whose guard
    failed (the frame's compile just before where the failure names none); 0 where one is unknown."""
    entry = event.guards[0].entry if event.guards else ""
    if not entry and (before := _before(event, events)) is not None:
        entry = before.compile_id
    if event.compile_id not in inputs or entry not in inputs:
        return 0
    return inputs[event.compile_id] - inputs[entry]


def _before(event: DynamoEvent, events: Sequence[DynamoEvent]) -> DynamoEvent | None:
    """The compile of `event`'s frame just before it (ids "frame/compile"); None for its first."""
    frame = event.compile_id.split("/", 1)[0]
    earlier = [e for e in events[: events.index(event)] if e.compile_id.split("/", 1)[0] == frame]
    return earlier[-1] if earlier else None


def _breaks(breaks: Sequence[GraphBreak], per_step: int | None) -> tuple[GraphBreakEntry, ...]:
    grouped: dict[tuple[str, str], list[GraphBreak]] = defaultdict(list)
    for b in breaks:
        grouped[(b.reason, b.at)].append(b)
    out = []
    for (reason, at), found in grouped.items():
        first = found[0]
        user = user_line(first.stack) or at
        out.append(
            GraphBreakEntry(
                reason=reason,
                at=user,
                compiles=len(found),
                explanation=first.explanation,
                graphs_per_step=per_step,
                fix=break_fix(reason, first.explanation),
            )
        )
    return tuple(out)


def _ranking(events: Sequence[DynamoEvent]) -> tuple[RankingEntry, ...]:
    seconds: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    letters: dict[str, list[str]] = defaultdict(list)
    for e in events:
        key = e.call_site or e.code or "(unknown)"
        seconds[key] += e.seconds + e.xla_seconds
        count[key] += 1
        letters[key].extend(e.variants)
    return tuple(
        RankingEntry(key=k, compiles=count[k], seconds=round(seconds[k], 6), variants=tuple(letters[k]))
        for k in sorted(seconds, key=lambda k: (-seconds[k], k))
    )
