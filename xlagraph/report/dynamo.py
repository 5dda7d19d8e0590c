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
from collections.abc import Sequence
from dataclasses import replace

from xlagraph.diagnose.dynamo_join import join
from xlagraph.diagnose.dynamo_join.branches import branch_fix
from xlagraph.diagnose.dynamo_join.expected import mode_switched, switch_fix
from xlagraph.diagnose.dynamo_join.retrace import GuardFailure, Retrace
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.frames import is_library, source_line, split_location
from xlagraph.diagnose.guards import explain_guard, fix_for
from xlagraph.diagnose.value_origin import origin_of
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

__all__ = ["break_fix", "dynamo_section", "joined", "user_function"]

_MODES = frozenset({"train_eval", "grad_mode"})  # one graph per mode: expected once each
_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")
# Graph-break reasons dynamo gives (its first line), and the fix that removes each.
_BREAK_FIXES: tuple[tuple[str, str], ...] = (
    (
        "Tensor.backward",
        "dynamo does not trace backward(): compile the model (torch.compile(model)) or the forward and loss, "
        "and call loss.backward() and the optimizer outside the compiled function (or compile the whole step "
        "with torch_xla.compile)",
    ),
    (
        "Optimizer.zero_grad",
        "call optimizer.zero_grad() outside the compiled function",
    ),
    (
        "Data-dependent branching",
        "an `if` on a tensor's value: compute both branches and pick with torch.where(cond, a, b), or move "
        "the test out of the compiled function",
    ),
    (
        "Tensor.item",
        "`.item()` reads a value back to Python: keep it a tensor inside the compiled function "
        "(x.sum().clamp(min=1.0), not x.sum().item()), and read it after the step (on backend='openxla', "
        "torch._dynamo.config.capture_scalar_outputs = True fails to compile)",
    ),
    (
        "builtin: print",
        "print() inside the compiled function: print after the call (or log the returned tensor)",
    ),
    (
        "print",
        "print() inside the compiled function: print after the call (or log the returned tensor)",
    ),
)
_BREAK_FIX_DEFAULT = (
    "move the line out of the compiled function (before or after the call), or rewrite it with tensor "
    "operations dynamo traces; each break splits the function into more graphs compiled and run apart"
)


def user_function(c: DynamoCompile) -> str:
    """The user's name of the compiled frame: a resume function (the code after a graph break) is
    named as the function it resumes; torch's own wrapper of a compiled module (`inner` in
    torch/_dynamo) as the call it wraps."""
    m = _RESUME.match(c.function)
    if m:
        return f"{m['fn']} (after the graph break at line {m['line']})"
    if c.file and is_library(Frame(c.function, c.file, c.line)) and c.file.startswith("torch/"):
        site = _call_site(c)
        return f"the compiled call at {site}" if site != c.code else c.function
    return c.function


def break_fix(reason: str, explanation: str = "") -> str:
    low = f"{reason} {explanation}".lower()
    for needle, fix in _BREAK_FIXES:
        if needle.lower() in low:
            return fix
    return _BREAK_FIX_DEFAULT


def _call_site(c: DynamoCompile) -> str:
    for f in c.call_stack:
        if not is_library(f) and not f.file.startswith("<"):
            return f"{f.file}:{f.line}"
    return c.code


def _guards(c: DynamoCompile, files: Sequence[str] = ()) -> tuple[GuardFailure, ...]:
    """`files`: the compiled frames' files of the run, for a record that names none (the recompile
    limit's), so the cut path in a guard's note is found again all the same."""
    out = []
    for k, text in enumerate(c.guard_failures):
        g = explain_guard(text, c.file)
        for file in files if not c.file and g.file else ():
            if (g2 := explain_guard(text, file)).file == file:
                g = g2
                break
        # the first failure is what changed since the last compile: where was it computed?
        origin = origin_of(g.kind, g.subject, c.code, _call_site(c)) if k == 0 and c.recompile else ""
        out.append(
            GuardFailure(
                kind=g.kind,
                phrase=g.phrase,
                text=g.text,
                at=f"{g.file}:{g.line}" if g.line else "",
                source=g.source,
                entry=g.entry,
                fix=branch_fix(g.kind, g.source, g.subject) or fix_for(g.kind),
                origin=origin,
                origin_source=source_line(*split_location(origin)).strip() if origin else "",
            )
        )
    return tuple(out)


def _owners(compiles: Sequence[DynamoCompile], variants: Sequence[Variant]) -> dict[str, list[Variant]]:
    """The XLA graphs compiled for each compile: a graph first run in a step belongs to the last
    compile (in the order dynamo began them) of that step that began at or before its first sync."""
    owned: dict[str, list[Variant]] = defaultdict(list)
    for v in variants:
        if not v.compiled:
            continue
        owner = None
        for c in compiles:
            if c.step == v.first_step and c.sync is not None and c.sync <= v.first_sync:
                owner = c
        if owner is not None:
            owned[owner.compile_id].append(v)
    return owned


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
    owned = _owners(compiles, variants)
    xla_seconds = {s.graph_hash: s.compile_seconds for s in syncs if s.compiled}
    events: list[DynamoEvent] = []
    files = tuple(dict.fromkeys(c.file for c in compiles if c.file))
    for c in compiles:
        fn = user_function(c)
        guards = _guards(c, files)
        added = owned.get(c.compile_id, [])
        xla = sum(xla_seconds.get(v.graph_hash, 0.0) for v in added)
        kind = "cache_limit" if c.hit_limit else "recompile" if c.recompile else "first"
        first_kind = guards[0].kind if guards else ""
        expected = kind == "first" or (first_kind in _MODES and _first_of_mode(c, compiles))
        fix = (
            "fix the change named in the recompiles before it; "
            "torch._dynamo.config.recompile_limit raises the "
            "limit, but every recompile costs a compile"
            if kind == "cache_limit"
            else (guards[0].fix if guards else fix_for(first_kind))
            if kind == "recompile"
            else ""
        )
        events.append(
            DynamoEvent(
                compile_id=c.compile_id,
                kind=kind,
                function=fn,
                code=c.code,
                call_site=_call_site(c),
                step=c.step,
                sync=c.sync,
                summary=_summary(c, guards, fn),
                guards=guards,
                breaks=tuple(f"{b.reason} at {b.at}" for b in c.graph_breaks),
                seconds=round(c.seconds + c.backward_seconds, 6),
                backend_seconds=round(c.backend_seconds, 6),
                xla_seconds=round(xla, 6),
                variants=tuple(v.letter for v in added),
                fix=fix,
                expected=expected,
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
    recompiles: Sequence[Recompile], section: DynamoSection, timeline: Sequence[TimelineEntry]
) -> tuple[tuple[Recompile, ...], DynamoSection]:
    """The recompiles joined to torch.compile's half: each graph said with the compile that made it;
    and the section, where a retrace for another mode that switched it for good is no longer
    expected (`mode_switched`: the XLA graphs say so, the retrace says it alike)."""
    made = {v: e.compile_id for e in section.events for v in e.variants}
    retraces = {
        e.compile_id: Retrace(e.guards[0], e.function, e.call_site, e.expected)
        for e in section.events
        if e.kind == "recompile" and e.guards
    }
    phases: dict[str, set[str]] = defaultdict(set)
    last_run: dict[str, int] = {}
    for t in timeline:
        phases[t.variant].add(t.phase)
        last_run[t.variant] = max(last_run.get(t.variant, t.sync), t.sync)
    recompiles = [replace(r, dynamo=made.get(r.variant, "")) for r in recompiles]
    switched = {r.dynamo for r in recompiles if mode_switched(r, retraces, last_run)}
    if switched:
        events = tuple(
            replace(e, expected=False, fix=fix_text(switch_fix(retraces[e.compile_id])))
            if e.compile_id in switched
            else e
            for e in section.events
        )
        section = replace(section, events=events, recompiles=tuple(e for e in events if e.kind != "first"))
    return join(recompiles, retraces, phases, last_run), section


def _first_of_mode(c: DynamoCompile, compiles: Sequence[DynamoCompile]) -> bool:
    """A train/eval switch is expected the first time each mode is compiled for a frame."""
    seen = 0
    for d in compiles:
        first = d.guard_failures[0] if d.frame_id == c.frame_id and d.recompile and d.guard_failures else ""
        if first and explain_guard(first, d.file).kind in _MODES:
            seen += 1
        if d is c:
            break
    return seen <= 1


def _breaks(breaks: Sequence[GraphBreak], per_step: int | None) -> tuple[GraphBreakEntry, ...]:
    grouped: dict[tuple[str, str], list[GraphBreak]] = defaultdict(list)
    for b in breaks:
        grouped[(b.reason, b.at)].append(b)
    out = []
    for (reason, at), found in grouped.items():
        first = found[0]
        user = _user_line(first.stack) or at
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


def _user_line(stack: tuple[Frame, ...]) -> str:
    for f in stack:
        if not is_library(f):
            return f"{f.file}:{f.line}"
    return ""


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
