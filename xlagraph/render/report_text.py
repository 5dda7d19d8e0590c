"""Plain text of `xlagraph report` and `xlagraph check`: the answer first, every list bounded.

Order: how many graphs compiled and whether the loop settled, the timeline, then each recompile
(the baseline, each cause with the user's line, what it points at and the fix), the ranking,
and last the notes on what the source could not say.
"""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause
from xlagraph.render.dynamo_text import dynamo_lines, dynamo_origin
from xlagraph.render.eager_text import eager_lines
from xlagraph.render.text import _wrap, plural
from xlagraph.report.model import (
    CheckResult,
    RankingEntry,
    Recompile,
    RunReport,
    SteadyTurns,
    TimelineEntry,
    to_fix_first,
)
from xlagraph.source_paths import short_location, short_locations_in

__all__ = ["render_check_text", "render_report_text"]

_EXPLICIT = ("sync", "mark_step", "torch_xla.compile", "dynamo", "unknown")
_MAX_PERIOD = 4
_MIN_REPEATS = 3
_MAX_TENSORS_LISTED = 6
_MAX_LISTED = 6
_KIND_NAMES = {
    "save-file": "XLA_SAVE_TENSORS_FILE dump",
    "capture": "xlagraph capture",
    "torch-trace": "torch structured trace, TORCH_TRACE",
}


_short = short_location


def _fix(cause: Cause) -> str:
    """The fix text with its registry ID, which names the scripts that show it works."""
    return f"{cause.hint} [{cause.fix_id}]" if cause.fix_id else cause.hint


def _field(name: str, text: str, indent: str = "    ") -> list[str]:
    return _wrap(text, f"{indent}{name:<7} ")


def _token(entries: list[TimelineEntry]) -> str:
    parts = []
    for e in entries:
        mark = e.variant + ("*" if e.compiled else "")
        if e.trigger not in _EXPLICIT:
            mark += f"[{e.trigger}]"
        parts.append(mark)
    return "+".join(parts)


def _compress(tokens: list[str]) -> list[str]:
    """`A B A B A B A` -> `(A B) x3 A`: repeated cycles of up to four steps are folded."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        best_p, best_reps = 1, 1
        for p in range(1, _MAX_PERIOD + 1):
            unit = tokens[i : i + p]
            if len(unit) < p:
                break
            reps = 1
            while tokens[i + reps * p : i + (reps + 1) * p] == unit:
                reps += 1
            if reps >= _MIN_REPEATS and reps * p > best_p * best_reps:
                best_p, best_reps = p, reps
        if best_reps >= _MIN_REPEATS:
            unit_text = " ".join(tokens[i : i + best_p])
            out.append(f"({unit_text}) x{best_reps}" if best_p > 1 else f"{unit_text} x{best_reps}")
            i += best_p * best_reps
        else:
            out.append(tokens[i])
            i += 1
    return out


def _timeline(report: RunReport) -> list[str]:
    by_step: dict[int, list[TimelineEntry]] = {}
    for e in report.timeline:
        by_step.setdefault(e.step, []).append(e)
    tokens = [_token(entries) for _, entries in sorted(by_step.items())]
    return [
        "timeline, one entry per step (* compiled, + joins the syncs of one step, [..] implicit sync):",
        *_wrap(" ".join(_compress(tokens)), "  "),
    ]


def _settled(report: RunReport) -> str:
    if not report.timeline:
        if report.eager is not None:
            return "no XLA graph: eager mode's op compiles below"
        if report.dynamo is not None:
            return "no XLA graph: torch.compile's record below"
        return "no sync recorded"
    if report.steady_from_step is None:
        return "no steady state: the run compiled until its last step"
    first_step = report.timeline[0].step
    warm = (
        f"warm-up: step {first_step}"
        if report.steady_from_step - 1 == first_step
        else f"warm-up: steps {first_step}-{report.steady_from_step - 1}"
    )
    graphs = report.steady_variants
    if len(graphs) == 1:
        steady = f"steady state from step {report.steady_from_step}: one graph ({graphs[0]}) replayed"
    elif report.steady_each_step:
        steady = (
            f"steady state from step {report.steady_from_step}: every step runs the same {len(graphs)} "
            f"graphs ({', '.join(graphs)}), each replayed"
        )
    else:
        t = report.steady_turns
        why = f": {_turns(t)}" if t is not None else ""
        settle = (
            "each compiled once and replayed (expected: nothing to fix)"
            if t is not None and t.expected
            else "a stable loop runs one"
        )
        every = f"{len(graphs)} graphs take turns ({', '.join(graphs)})"
        taking = t.taking_turns(graphs) if t is not None else every
        steady = f"steady state from step {report.steady_from_step}: {taking}{why}; {settle}"
    return f"{warm}; {steady}"


def _turns(t: SteadyTurns) -> str:
    """`the same updates in another order at train.py:49 (parameter_permutation)`."""
    at = f" at {_short(t.line)}" if t.line else ""
    return f"{t.phrase}{at}" + (f" ({', '.join(t.kinds)})" if t.kinds else "")


def _header(report: RunReport) -> list[str]:
    kind = _KIND_NAMES.get(report.kind, report.kind)
    who = f"  process {report.process}" if report.process else ""
    counted = (
        f"torch_xla counted {report.compiles_reported}"
        if report.compiles_reported is not None
        else "no torch_xla count in this source"
    )
    seconds = f", {report.compile_seconds:.1f} s compiling" if report.compile_seconds else ""
    recompiles = len(report.recompiles)
    expected = sum(r.expected for r in report.recompiles)
    split = f" ({recompiles - expected} to fix, {expected} expected)" if 0 < expected < recompiles else ""
    split = " (expected: nothing to fix)" if expected and expected == recompiles else split
    summary = (
        f"{plural(report.compiles, 'graph')} compiled ({counted}){seconds} in "
        f"{plural(report.syncs, 'sync')}, {plural(report.steps, 'step')}"
        + (
            f" (and {report.side_steps} synced at a line of its own: an evaluation pass, not a step)"
            if report.side_steps == 1
            else f" (and {report.side_steps} synced at lines of their own: evaluation passes, not steps)"
            if report.side_steps
            else ""
        )
        + "; "
        + (f"{plural(recompiles, 'recompile')}{split} explained below" if recompiles else _none(report))
        + (
            f"; eager mode compiled {len(report.eager.recompiled)} op(s) again, explained below"
            if report.eager is not None and report.eager.recompiled
            else ""
        )
        + (
            f"; torch.compile recompiled {len(report.dynamo.recompiles)} time(s), explained below"
            if report.dynamo is not None and report.dynamo.recompiles and not report.recompiles
            else ""
        )
        + (
            f", and {plural(len(report.first_compiles), 'first compile')} of another program"
            if report.first_compiles
            else ""
        )
    )
    lines = [
        f"xlagraph report  {report.source}  ({kind}){who}",
        *_wrap(summary, ""),
        *_wrap(_settled(report), ""),
    ]
    turns = report.steady_turns
    if turns is not None and len(turns.turns) > 1:  # a cycle of more than two: each turn
        each = "; ".join(
            f"{t.variant} after {t.against}: {', '.join(t.kinds) or t.note}"
            + (f" at {_short(t.lines[0])}" if t.lines else "")
            for t in turns.turns
        )
        lines += _wrap(each, "  turns   ", "          ")
    lines += [w for warning in report.warnings for w in _wrap(warning, "warning: ")]
    return lines


def _none(report: RunReport) -> str:
    compiled = (report.dynamo is not None and report.dynamo.recompiles) or (
        report.eager is not None and report.eager.recompiled
    )
    return "no XLA recompile" if compiled else "no recompile"


def _where(r: Recompile) -> str:
    return f" ({r.trigger} at {_short(r.call_site)})" if r.call_site else f" ({r.trigger})"


def _tag(cause: Cause) -> str:
    return f"{cause.kind} (expected)" if cause.info else str(cause.kind)


def _recompile(r: Recompile, k: int, total: int, origin: str = "") -> list[str]:
    lines = [f"recompile {k}/{total}: graph {r.variant} at step {r.step}, sync {r.sync}{_where(r)}"]
    if origin:
        lines += _field("from", origin, "  ")
    if r.baseline is not None:
        b = r.baseline
        why = f"; {b.why}" if len(b.compared) > 1 else ""  # one compared: no choice to explain
        lines += _field("vs", f"{b.variant} (sync {b.sync}, {b.reason}{why})", "  ")
    if r.note:
        lines += _field("note", r.note, "  ")
    attributions = {a.cause: a for a in r.attribution}
    for i, cause in enumerate(r.causes):
        lines += _wrap(f"{_tag(cause)}: {short_locations_in(cause.summary)}", "  ", "    ")
        a = attributions.get(i)
        if a is not None:
            if a.lines:
                lines += _field("at", ", ".join(_short(x) for x in a.lines[:_MAX_LISTED]))
            if a.library_lines:
                lines += _field("via", ", ".join(_short(x) for x in a.library_lines[:3]))
            if a.items:
                lines += _field("what", "; ".join(a.items))
            for t in a.tensors[:_MAX_TENSORS_LISTED]:
                made = f" created at {_short(t.line)}" if t.line else ""
                guess = (
                    "" if t.match in ("shape and line", "by elimination") else " (same shape; a candidate)"
                )
                kept = ""
                if t.held_by:
                    at = f", stored at {', '.join(_short(x) for x in t.stored_at)}" if t.stored_at else ""
                    kept = f", kept in {t.held_by}{at}"
                lines += _field("tensor", f"id={t.id} {t.shape}{made}{kept}{guess}")
            if len(a.tensors) > _MAX_TENSORS_LISTED:
                lines += _field("tensor", f"... and {len(a.tensors) - _MAX_TENSORS_LISTED} more")
        lines += _field("fix", short_locations_in(_fix(cause)))
    for note in r.notes:
        lines += _field("note", note, "  ")
    if r.frames:
        folded = f"  (+{plural(len(r.library_frames), 'library frame')} folded)" if r.library_frames else ""
        stack = " <- ".join(f"{f.function} ({_short(f'{f.file}:{f.line}')})" for f in r.frames[:_MAX_LISTED])
        lines += _wrap(stack + folded, "  stack   ", "          ")
    return lines


def _first_compile(r: Recompile) -> list[str]:
    """A program's first graph (not a recompile): what it is and where, and what any cause found
    against the earlier graph of its step would have you change."""
    lines = _wrap(f"graph {r.variant} at step {r.step}, sync {r.sync}{_where(r)}", "  - ", "    ")
    if r.note:
        lines += _wrap(r.note, "    ", "    ")
    for cause in r.causes:
        lines += _wrap(f"{_tag(cause)}: {short_locations_in(cause.summary)}", "    ", "      ")
        if not cause.info:
            lines += _field("fix", short_locations_in(_fix(cause)), "    ")
    return lines


def _ranking(report: RunReport) -> list[str]:
    if not report.recompiles:
        return []

    def row(key: str, e: RankingEntry) -> str:
        sec = f", {e.seconds:.1f} s" if e.seconds else ""
        expected = " (expected)" if e.expected else ""
        return f"{key}{expected}: {e.compiles}{sec} ({', '.join(e.variants[:_MAX_LISTED])})"

    sites = "; ".join(row(_short(e.key), e) for e in report.by_call_site[:5])
    causes = "; ".join(row(e.key, e) for e in report.by_cause[:5])
    return [
        "recompiles by call site and by cause, costliest first (expected ones last):",
        *_field("site", sites, "  "),
        *_field("cause", causes, "  "),
    ]


def _trace_only(report: RunReport) -> list[str]:
    """A TORCH_TRACE read alone: dynamo's half, no XLA graphs to count or diff."""
    kind = _KIND_NAMES.get(report.kind, report.kind)
    lines = [f"xlagraph report  {report.source}  ({kind})"]
    if report.dynamo is not None:
        lines += dynamo_lines(report.dynamo)
    if report.notes:
        lines += ["", "notes:"] + [w for n in report.notes for w in _wrap(n, "  - ", "    ")]
    return lines


def _one(report: RunReport) -> list[str]:
    if report.kind == "torch-trace":
        return _trace_only(report)
    lines = _header(report)
    if report.eager is not None:
        lines += ["", *eager_lines(report.eager)]
    if report.timeline or (report.eager is None and report.dynamo is None):
        lines += ["", *_timeline(report)]
    if report.dynamo is not None:
        lines += ["", *dynamo_lines(report.dynamo)]
    ordered = to_fix_first(report.recompiles)  # what to fix first; expected warm-up apart, after
    for k, r in enumerate(ordered, 1):
        if r.expected and (k == 1 or not ordered[k - 2].expected):
            lines += ["", "expected recompiles (warm-up: nothing to fix):"]
        lines += ["", *_recompile(r, k, len(ordered), dynamo_origin(r.dynamo, report.dynamo))]
    if report.first_compiles:
        lines += ["", "first compiles of other programs and uses (not recompiles: each compiles once):"]
        lines += [w for r in report.first_compiles for w in _first_compile(r)]
    if report.findings:
        lines += ["", "findings (cost every step, no recompile):"]
        for cause in report.findings:
            lines += _wrap(f"{_tag(cause)}: {cause.summary}", "  ", "    ")
            lines += _field("at", ", ".join(_short(x) for x in cause.sources))
            lines += _field("fix", _fix(cause))
    ranking = _ranking(report)
    if ranking:
        lines += ["", *ranking]
    if report.notes:
        lines += ["", "notes:"] + [w for n in report.notes for w in _wrap(n, "  - ", "    ")]
    return lines


def render_report_text(reports: tuple[RunReport, ...]) -> str:
    """Every process's report, one after the other."""
    blocks = ["\n".join(_one(r)) for r in reports]
    return "\n\n".join(blocks) + "\n"


def render_check_text(results: tuple[CheckResult, ...]) -> str:
    return "".join(r.explanation + "\n" for r in results)
