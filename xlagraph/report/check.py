"""`check_run`: the CI gate. Pass when at most N distinct graphs compiled after warm-up.

Steps are numbered from 0. With `after_step=K`, graphs first compiled in steps 0..K are warm-up
and do not count; without it every compiled graph counts. A graph counts once however often it
runs. The explanation names every counted graph beyond the budget with its causes and lines.
"""

from __future__ import annotations

from xlagraph.report.build import build_report
from xlagraph.report.model import CheckResult, CountedGraph, RunReport
from xlagraph.runlog import RunLog

__all__ = ["check_run"]


def _counted(report: RunReport, after_step: int | None) -> tuple[CountedGraph, ...]:
    recompiles = {r.variant: r for r in (*report.recompiles, *report.first_compiles)}
    out = []
    for v in report.variants:
        if not v.compiled:
            continue
        first_compile = next(e for e in report.timeline if e.variant == v.letter and e.compiled)
        if after_step is not None and first_compile.step <= after_step:
            continue
        r = recompiles.get(v.letter)
        out.append(
            CountedGraph(
                variant=v.letter,
                sync=first_compile.sync,
                step=first_compile.step,
                call_site=first_compile.call_site,
                kinds=r.kinds if r else (),
                lines=r.lines if r else (first_compile.call_site,) if first_compile.call_site else (),
            )
        )
    return tuple(out)


def _graphs(n: int) -> str:
    return "1 graph" if n == 1 else f"{n} graphs"


def _describe(g: CountedGraph) -> str:
    what = ", ".join(g.kinds) if g.kinds else "first graph"
    where = f" at {g.lines[0]}" if g.lines else ""
    return f"{g.variant} (step {g.step}, sync {g.sync}: {what}{where})"


def _dynamo_gate(
    report: RunReport, after_step: int | None, max_recompiles: int | None, no_graph_breaks: bool
) -> tuple[bool, str]:
    """The compiled modes' part of the gate: dynamo recompiles that are not expected (a mode compiled
    once each is) and eager mode's ops compiled again for new shapes, after the warm-up; graph breaks."""
    d, eager = report.dynamo, report.eager
    if max_recompiles is None and not no_graph_breaks:
        return True, ""
    if d is None and eager is None:
        return True, "no torch.compile record in this source (nothing to count for torch.compile)"
    parts, passed = [], True
    gates: list[tuple[str, list[str]]] = []
    if max_recompiles is not None and d is not None:
        counted = [e for e in d.unexpected if after_step is None or e.step is None or e.step > after_step]
        gates.append(
            ("torch.compile recompile(s)", [f"{e.compile_id} at step {e.step}: {e.summary}" for e in counted])
        )
    if max_recompiles is not None and eager is not None:
        ops = [o for o in eager.recompiled if after_step is None or o.step > after_step]
        gates.append(
            ("eager op recompile(s)", [f"step {o.step}: {o.op} {o.shapes} (was {o.was})" for o in ops])
        )
    for what, items in gates:
        ok, text = _budget(what, items, max_recompiles or 0)
        passed &= ok
        parts.append(text)
    if no_graph_breaks and d is not None:
        if d.graph_breaks:
            passed = False
            listed = "; ".join(f"{b.reason} at {b.at}" for b in d.graph_breaks)
            parts.append(f"FAIL: {len(d.graph_breaks)} graph break(s): {listed}")
        else:
            parts.append("ok: no graph break")
    return passed, "; ".join(parts)


def _budget(what: str, items: list[str], most: int) -> tuple[bool, str]:
    if len(items) <= most:
        return True, f"ok: {len(items)} {what}, at most {most} allowed"
    return False, f"FAIL: {len(items)} {what}, at most {most} allowed; extra: {'; '.join(items[most:])}"


def check_run(
    log: RunLog,
    max_graphs: int | None,
    after_step: int | None = None,
    report: RunReport | None = None,
    *,
    max_recompiles: int | None = None,
    no_graph_breaks: bool = False,
) -> CheckResult:
    """Count the distinct graphs compiled after step `after_step` (all when None) against the
    budget (None: no graph budget), and torch.compile's recompiles and graph breaks where asked;
    `report` is reused when the caller already built it."""
    if max_graphs is not None and max_graphs < 0:
        raise ValueError(f"max_graphs must be 0 or more, got {max_graphs}")
    if report is None:
        report = build_report(log, explain=False)
        if max_graphs is not None and len(_counted(report, after_step)) > max_graphs:
            report = build_report(log)
    dynamo_passed, dynamo_text = _dynamo_gate(report, after_step, max_recompiles, no_graph_breaks)
    who = f"{report.process}: " if report.process else ""
    if max_graphs is None:
        return CheckResult(report.process, dynamo_passed, max_graphs, after_step, (), f"{who}{dynamo_text}")
    counted = _counted(report, after_step)
    when = f"after step {after_step}" if after_step is not None else "in the run"
    passed = len(counted) <= max_graphs
    if passed:
        explanation = f"{who}ok: {_graphs(len(counted))} compiled {when}, at most {max_graphs} allowed"
    else:
        extra = counted[max_graphs:]
        explanation = (
            f"{who}FAIL: {_graphs(len(counted))} compiled {when}, at most {max_graphs} allowed; "
            f"extra: {'; '.join(_describe(g) for g in extra)}"
        )
    turns = report.steady_turns
    if turns is not None:
        explanation = f"{explanation}; {_turns(report)}"
    if dynamo_text:
        explanation = f"{explanation}; {dynamo_text}"
    return CheckResult(
        report.process, passed and dynamo_passed, max_graphs, after_step, counted, explanation, turns
    )


def _turns(report: RunReport) -> str:
    """The steady state's turns as the report's line says them: what to fix for the loop to settle."""
    t = report.steady_turns
    assert t is not None
    at = f" at {t.line}" if t.line else ""
    kinds = f" ({', '.join(t.kinds)})" if t.kinds else ""
    expected = " (expected: each compiled once and replayed)" if t.expected else ""
    return (
        f"steady state from step {report.steady_from_step}: {t.taking_turns(report.steady_variants)}: "
        f"{t.phrase}{at}{kinds}{expected}"
    )
