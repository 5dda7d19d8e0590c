"""JSON of `xlagraph report` and `xlagraph check` (plain dicts, lists, str, int, float, bool, null).

The schemas (`xlagraph.report/1`, `xlagraph.check/1`), every field with what it means, are in
docs/json.md: a field added here is added there. The top-level object is the first process of
the run and `processes` lists every process, the first included, with the same fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from xlagraph.ir import Frame
from xlagraph.render.json import _cause as cause_to_json
from xlagraph.report.model import (
    Attribution,
    CheckResult,
    DynamoEvent,
    DynamoSection,
    RankingEntry,
    Recompile,
    RunReport,
    SteadyTurns,
    to_fix_first,
)

__all__ = ["REPORT_SCHEMA", "check_to_json", "recompile_to_json", "report_to_json", "turns_to_json"]

REPORT_SCHEMA = "xlagraph.report/1"
CHECK_SCHEMA = "xlagraph.check/1"


def _frame(f: Frame) -> dict[str, Any]:
    return {"function": f.function, "file": f.file, "line": f.line}


def _attribution(a: Attribution) -> dict[str, Any]:
    return {
        "cause": a.cause,
        "kind": a.kind,
        "summary": a.summary,
        "items": list(a.items),
        "tensors": [
            {
                "id": t.id,
                "shape": t.shape,
                "line": t.line,
                "match": t.match,
                "frames": [_frame(f) for f in t.frames],
                "library_frames": t.library_frames,
                "held_by": t.held_by,
                "stored_at": list(t.stored_at),
            }
            for t in a.tensors
        ],
        "lines": list(a.lines),
        "library_lines": list(a.library_lines),
    }


def recompile_to_json(r: Recompile) -> dict[str, Any]:
    return {
        "sync": r.sync,
        "step": r.step,
        "variant": r.variant,
        "graph_hash": r.graph_hash,
        "expected": r.expected,
        "call_site": r.call_site,
        "trigger": r.trigger,
        "frames": [_frame(f) for f in r.frames],
        "library_frames": [_frame(f) for f in r.library_frames],
        "baseline": (
            {
                "variant": r.baseline.variant,
                "sync": r.baseline.sync,
                "reason": r.baseline.reason,
                "why": r.baseline.why,
                "compared": list(r.baseline.compared),
            }
            if r.baseline
            else None
        ),
        "causes": [cause_to_json(c) for c in r.causes],
        "attribution": [_attribution(a) for a in r.attribution],
        "lines": list(r.lines),
        "note": r.note,
        "notes": list(r.notes),
        "compile_seconds": r.compile_seconds,
        "dynamo": r.dynamo,
    }


def turns_to_json(t: SteadyTurns | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {
        "variants": list(t.variants),
        "phrase": t.phrase,
        "kinds": list(t.kinds),
        "line": t.line,
        "expected": t.expected,
        "turns": [
            {
                "variant": u.variant,
                "against": u.against,
                "kinds": list(u.kinds),
                "lines": list(u.lines),
                "note": u.note,
                "expected": u.expected,
            }
            for u in t.turns
        ],
    }


def _dynamo(d: DynamoSection | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {
        "source": d.source,
        "frames": d.frames,
        "compiles": d.compiles,
        "seconds": d.seconds,
        "events": [_event(e) for e in d.events],
        "recompiles": [e.compile_id for e in d.recompiles],
        "graph_breaks": [asdict(b) for b in d.graph_breaks],
        "ranking": _ranking(d.by_call_site, "call_site", expected=False),
        "notes": list(d.notes),
    }


def _ranking(entries: Sequence[RankingEntry], key: str, expected: bool = True) -> list[dict[str, Any]]:
    """A ranking's rows, `key` naming what each ranks (dynamo's rows have no `expected`)."""
    rows: list[dict[str, Any]] = []
    for e in entries:
        row = {key: e.key, "compiles": e.compiles, "seconds": e.seconds, "variants": list(e.variants)}
        rows.append({**row, "expected": e.expected} if expected else row)
    return rows


def _event(e: DynamoEvent) -> dict[str, Any]:
    out = asdict(e)
    out["guards"] = [asdict(g) for g in e.guards]
    out["breaks"] = list(e.breaks)
    out["variants"] = list(e.variants)
    return out


def _process(report: RunReport) -> dict[str, Any]:
    return {
        "source": report.source,
        "kind": report.kind,
        "process": report.process,
        "compiles": report.compiles,
        "compiles_reported": report.compiles_reported,
        "syncs": report.syncs,
        "steps": report.steps,
        "side_steps": report.side_steps,
        "compile_seconds": report.compile_seconds,
        "steady_from_step": report.steady_from_step,
        "steady_variants": list(report.steady_variants),
        "steady_each_step": report.steady_each_step,
        "steady_turns": turns_to_json(report.steady_turns),
        "variants": [
            {
                "variant": v.letter,
                "graph_hash": v.graph_hash,
                "first_sync": v.first_sync,
                "first_step": v.first_step,
                "executions": v.executions,
                "compiled": v.compiled,
                "call_site": v.call_site,
                "module": v.module,
            }
            for v in report.variants
        ],
        "timeline": [asdict(e) for e in report.timeline],  # its fields, all plain values
        "recompiles": [recompile_to_json(r) for r in to_fix_first(report.recompiles)],
        "first_compiles": [recompile_to_json(r) for r in report.first_compiles],
        "ranking": {
            "call_sites": _ranking(report.by_call_site, "call_site"),
            "causes": _ranking(report.by_cause, "kind"),
        },
        "findings": [cause_to_json(c) for c in report.findings],
        "notes": list(report.notes),
        "warnings": list(report.warnings),
        "dynamo": _dynamo(report.dynamo),
        "eager": asdict(report.eager) if report.eager is not None else None,
    }


def report_to_json(reports: tuple[RunReport, ...]) -> dict[str, Any]:
    """The run as one dict: the first process's fields at the top, every process in `processes`."""
    if not reports:
        raise ValueError("a report needs at least one process")
    processes = [_process(r) for r in reports]
    return {"schema": REPORT_SCHEMA, **processes[0], "processes": processes}


def check_to_json(results: tuple[CheckResult, ...]) -> dict[str, Any]:
    """`check` as a dict: passed only when every process passed."""
    return {
        "schema": CHECK_SCHEMA,
        "passed": all(r.passed for r in results),
        "max_graphs": results[0].max_graphs if results else None,
        "after_step": results[0].after_step if results else None,
        "processes": [
            {
                "process": r.process,
                "passed": r.passed,
                "counted": [
                    {
                        "variant": g.variant,
                        "sync": g.sync,
                        "step": g.step,
                        "call_site": g.call_site,
                        "kinds": list(g.kinds),
                        "lines": list(g.lines),
                    }
                    for g in r.counted
                ],
                "explanation": r.explanation,
                "steady_turns": turns_to_json(r.steady_turns),
            }
            for r in results
        ],
    }
