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


def check_run(
    log: RunLog, max_graphs: int, after_step: int | None = None, report: RunReport | None = None
) -> CheckResult:
    """Count the distinct graphs compiled after step `after_step` (all when None) against the
    budget; `report` is reused when the caller already built it."""
    if max_graphs < 0:
        raise ValueError(f"max_graphs must be 0 or more, got {max_graphs}")
    if report is None:
        report = build_report(log, explain=False)
        if len(_counted(report, after_step)) > max_graphs:
            report = build_report(log)
    counted = _counted(report, after_step)
    when = f"after step {after_step}" if after_step is not None else "in the run"
    who = f"{report.process}: " if report.process else ""
    passed = len(counted) <= max_graphs
    if passed:
        explanation = f"{who}ok: {_graphs(len(counted))} compiled {when}, at most {max_graphs} allowed"
    else:
        extra = counted[max_graphs:]
        explanation = (
            f"{who}FAIL: {_graphs(len(counted))} compiled {when}, at most {max_graphs} allowed; "
            f"extra: {'; '.join(_describe(g) for g in extra)}"
        )
    return CheckResult(report.process, passed, max_graphs, after_step, counted, explanation)
