"""JSON of `xlagraph report` and `xlagraph check` (plain dicts, lists, str, int, float, bool, null).

Schema of `xlagraph report --json` (`"schema": "xlagraph.report/1"`). The top-level object
describes the first process of the run (the only one for a single-process run or a save file;
rank 0 / the first subfolder of an `xmp.spawn` capture) and `processes` lists every process,
the first included, each with the same fields except `schema` and `processes`:

    schema             "xlagraph.report/1"
    source             the capture folder or save file read
    kind               "capture" | "save-file" | "torch-trace"
    process            process / rank name ("" for a save file)
    compiles           int: distinct graphs this process compiled
    compiles_reported  int | null: torch_xla's own CompileTime count, where the source has it
    syncs, steps       int: graph executions, steps (steps 0-based; save files: every explicit
                       torch_xla.sync()/mark_step() ends one); a step whose explicit syncs are
                       all at another line than the loop's marker (an evaluation pass synced in
                       the loop) is not counted in `steps` but in `side_steps` (int)
    compile_seconds    float: total compile time where known, else 0
    steady_from_step   int | null: first step of the steady state (every step after the last one
                       that compiled); null when the run compiled in its last step
    steady_variants    [str]: the variants that run in the steady state (a stable loop has one)
    steady_each_step   bool: every steady step runs all of them, in one order (a step cut by
                       torch.compile's graph breaks or a sync), rather than variants taking turns
    steady_turns       null, or why the steady variants take turns (B, C, B, C ...; a cycle of k),
                       where the report explained the run:
        variants       [str]: in the order they take turns
        phrase         str: what they differ in ("the same updates in another order")
        kinds          [str]: the cause kinds of all the turns' diffs
        line           str: the first user line they cite ("" where none)
        expected       bool: every turn's causes are expected (an evaluation pass, another mode's
                       graph): each compiled once and replayed, nothing to settle
        turns          [{variant, against, kinds, lines, note, expected}]: each variant against
                       the one that ran before it at its call site (a pair of two graphs once, the later
                       compiled against the earlier); note says why there are no kinds
    variants           [{variant, graph_hash, first_sync, first_step, executions, compiled,
                         call_site, module}]: one per distinct graph, letters A, B, ... in order of
                       first appearance; module is where its HLO is (PATH or PATH#K, "" if not kept)
    timeline           [{sync, step, variant, compiled, trigger, call_site, phase,
                         compile_seconds}]: one per sync; trigger is sync | mark_step |
                       torch_xla.compile | dynamo | .item() | .cpu() | .tolist() | .numpy() |
                       print | implicit | unknown; phase is warm-up | steady
    recompiles         one object per compile after the first: those with a cause to fix first,
                       then the expected ones (warm-up), each group in run order:
        sync, step, variant, graph_hash
        expected       bool: every cause is an expected change (info): nothing to fix
        call_site      "file:line" of the innermost user frame of the sync that compiled
        trigger        as in the timeline
        frames         [{function, file, line}]: the user's frames, innermost first
        library_frames [{function, file, line}]: library frames (torch, torch_xla, stdlib), folded
        baseline       {variant, sync, reason, why, compared} | null: the earlier graph it is
                       explained against (the most similar one from the same call site): reason
                       says which graphs were candidates ("same call site"), compared lists the
                       variants diffed in full (most recent first), why says why this one ("closest
                       of B, A: A differs only by warm-up state, B only by order (the same
                       computation)")
        causes         [cause]: exactly the cause objects of `xlagraph diff --json` (kind, summary,
                       hint, fix_id, info, computation, left, right, changes, mapping, sources), A being
                       the baseline and B this graph
        attribution    [{cause, kind, summary, items, tensors, lines, library_lines}]: per cause
                       (`cause` indexes `causes`): the outputs, inputs, moved tensors or
                       collective buckets involved (`items`), the live tensors they are
                       (`tensors`: [{id, shape, line, match, frames, library_frames, held_by,
                       stored_at}], captures only; match is "shape and line", "by elimination"
                       (the only ones the other graph did not compute), or "shape" for a mere
                       candidate; held_by is what kept it alive at the sync, "" where not
                       recorded, and stored_at the user's lines that store it there),
                       the user's source lines and the folded library lines
        lines          [str]: the user lines cited for this recompile, most specific first (the
                       causes' user lines, the tensors' creating lines, then the call site)
        note           str: why there are no causes, when there are none ("" otherwise)
        notes          [str]: remarks of the diff that change nothing (dead code on both sides)
        compile_seconds float
        dynamo         str: the torch.compile compile ("1/1", an id of `dynamo.events`) that made
                       this graph, "" where none did
    first_compiles     [recompile object]: the first graph of another program at the start of the
                       run or after its loop (the step function after torch_xla.compile's pending
                       graph, metrics read after the last step): compiled once, not a recompile;
                       its one info cause says what it is
    ranking            {call_sites: [{call_site, compiles, seconds, variants}],
                        causes: [{kind, compiles, seconds, variants}]}: recompiles per call
                       site and per cause kind, most compiles first, keys whose recompiles
                       are all expected (`expected`: true) last
    findings           [cause]: what costs every step without a recompile (a `graph_break`: a
                       step cut in two at a mid-step `.item()` / `print`), cause objects as in
                       `causes`; `check` does not count them
    dynamo             null, or torch.compile's record where the source has it (a capture of a
                       torch.compile / openxla run, any backend; a TORCH_TRACE file or folder):
        source, frames (int: frames compiled), compiles (int), seconds (float: dynamo and backend)
        events         [event]: every compile of a frame, in the order dynamo began them:
            compile_id   "F/N": frame F's N-th compile (N > 0: a recompile)
            kind         first | recompile | cache_limit (dynamo gave up: the frame runs eagerly)
            function, code  the compiled function in the user's name, its "file:line"
            call_site    "file:line": the user's line that called it
            step, sync   int | null: where in the run it began (captures)
            summary      str: the recompile in the user's words ("torch.compile traced `f` (t.py:3)
                         again: input `x`'s dimension 0 changed 8 -> 11")
            guards       [{kind, phrase, text, at, source, entry, fix, origin, origin_source}]:
                         dynamo's guard failures,
                         newest cache entry first (the first is what changed); kind is one of
                         tensor_size | tensor_rank | tensor_dtype | tensor_stride |
                         tensor_requires_grad | tensor_device | train_eval | global_value |
                         module_attribute | python_scalar | sequence_length | object_identity |
                         python_type | guard; text is dynamo's own; at the user's line that read it
                         (origin: the line that computed it before the call, where found)
            breaks       [str]: graph breaks this compile hit ("reason at file:line")
            seconds, backend_seconds, xla_seconds  float: dynamo's trace and the backend's compile,
                         the backend's part, XLA's compile of the graphs it added
            variants     [str]: the XLA graphs compiled for it (letters of `variants`)
            fix, expected, graph_ops, failure
        recompiles     [compile_id]: the events that are recompiles or a given-up compile
        graph_breaks   [{reason, at, compiles, explanation, graphs_per_step, fix}]
        ranking        [{call_site, compiles, seconds, variants}]: compile cost per call site
        notes          [str]
    eager              null, or eager mode's op compiles (torch_xla.experimental.eager_mode(True):
                       each op compiled on its own, torch_xla's EagerOpCompileTime):
        compiles (int), reported (int | null: torch_xla's count), seconds (float), first_step
        by_step        [[step, op compiles]]: the steps that compiled ops
        steps          [{step, summary, changes: [str], at: [str], seconds, recompiled: [op],
                        new: [op]}]: each later step that compiled ops; op = {step, op (torch's
                       name, "aten::addmm"), shapes ("f32[8,16], f32[16,32] -> f32[8,32]"), at
                       (the user's line that made a changed input, else the op's), was (the
                       shapes it compiled for before; "" in `new`), seconds}
        fix (str), unread (int: op compiles whose module was not kept)
    notes              [str]: what the source lacks or how something was inferred
    warnings           [str]: e.g. `compiles` disagreeing with `compiles_reported`
    processes          [process object]: every process, the first included

Schema of `xlagraph check --json`: {schema: "xlagraph.check/1", passed, max_graphs, after_step,
processes: [{process, passed, counted: [{variant, sync, step, call_site, kinds, lines}],
explanation, steady_turns}]}; steady_turns as in the report, where `check` explained the run (it
does when the graph budget fails).
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
