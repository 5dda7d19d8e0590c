"""A step's journal records: one entry per graph execution (its graph, whether it compiled, its
cause and frames, each written once and referred to by index), the graph records new or changed
since, and the step record with torch_xla's counters. The recorder decides where a step ends;
this writes what it holds.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from xlagraph.capture import files as fmt
from xlagraph.capture._dumps import scan_dumps
from xlagraph.capture._host import Host
from xlagraph.capture._journal import graph_records, intern_cause, intern_frames
from xlagraph.capture._source_lines import await_lines
from xlagraph.capture._state import GraphEntry
from xlagraph.capture._tensors_report import attach_tensors
from xlagraph.capture._xla_counters import compile_seconds, fallbacks
from xlagraph.parse.pt_xla_debug import Execution

__all__ = ["Stepper", "graph_of", "record_step"]


class Stepper(Host, Protocol):
    """What `record_step` uses of the recorder beyond `Host`."""

    debug: Any  # _debug_stream.DebugStream
    executions_reported: bool  # PT_XLA_DEBUG writes one Execution Analysis block per run
    lines_auto: bool  # XLAGRAPH_SOURCE_LINES=auto is on
    on_recompile: Any  # _on_recompile.OnRecompile, or None
    fd: int  # the journal

    def write(self, records: list[dict[str, Any]]) -> None:
        """Append records to the journal."""
        ...

    def sources_so_far(self) -> None:
        """Store the sources cited so far, where new ones were cited."""
        ...


def record_step(
    rec: Stepper,
    executions: list[Execution],
    own_start: int,
    t_end_perf: float,
    compiles: int,
    executes: int,
    closed_by_marker: bool = True,
    eager: list[list[Any]] | None = None,
    call: bool = False,
) -> None:
    """Write one step: `executions` (those from `own_start` on ran in this marker) and the
    counters read at its end."""
    s = rec.s
    now = t_end_perf - rec.t0
    records: list[dict[str, Any]] = []
    entries: list[list[int]] = []
    compiled: list[tuple[GraphEntry, Execution, bool]] = []
    for i, ex in enumerate(executions):
        graph = graph_of(rec, ex)
        entries.append(
            [
                graph.id,
                int(ex.compiled),
                intern_cause(s.causes, ex.cause, records),
                intern_frames(s.frames, ex, records, rec.paths),
            ]
        )
        if ex.compiled:
            compiled.append((graph, ex, i >= own_start))
            if rec.lines_auto and not s.lines_on:
                rec.update(graph, lines_off=True)
                if i >= own_start:  # run by a marker: its rerun can be lowered before the marker
                    await_lines(rec, ex.graph_hash)
            if rec.plan.hlo_dump:
                s.compile_queue.append((ex.graph_hash, ex.inputs))
    step: dict[str, Any] = {
        "k": fmt.STEP,
        "i": s.step,
        "t1": round(now, 6),  # it started where the previous step ended
        "c": compiles - s.compiles,
        "e": entries,
    }
    if not rec.executions_reported:  # else one entry per execution: len(e)
        step["x"] = executes - s.executes
    if compiles > s.compiles:
        step["cs"] = compile_seconds(rec.xlac, s)
        s.last_compile_marker = s.markers
        s.compile_seconds += sum(step["cs"])
        s.compile_count += len(step["cs"])
    if eager:
        step["eo"] = eager
    if grown := fallbacks(rec.xlac, s):
        step["fb"] = grown
    if (consumed := rec.debug.consumed(s.carry)) is not None:
        step["o"] = consumed
    s.joined_open = closed_by_marker and (call or s.bridge_marker)
    if not closed_by_marker:
        step["open"] = True
    elif call:  # a compiled function's call began: the previous call ended here
        step["call"] = 1
    elif s.bridge_marker:  # torch_xla's dynamo bridge synced, not the user: part of their step
        step["bridge"] = 1
    if s.overhead:
        step["ov"] = round(s.overhead + time.perf_counter() - t_end_perf, 6)
    if compiled:
        attach_tensors(rec, compiled)
        scan_dumps(rec)
    records.extend(graph_records(s))
    records.append(step)
    rec.write(records)
    if rec.on_recompile is not None:  # XLAGRAPH_ON_RECOMPILE=raise: the next boundary may wait
        rec.on_recompile.step_written(s.step, compiles > s.compiles or bool(eager), rec.fd)
    rec.sources_so_far()
    s.step += 1
    s.compiles, s.executes = compiles, executes


def graph_of(host: Host, ex: Execution) -> GraphEntry:
    """The graph an execution ran, its record made at its first execution."""
    graph = host.s.graphs.get(ex.graph_hash)
    if graph is None:
        record: dict[str, Any] = {
            "k": fmt.GRAPH,
            "id": len(host.s.graphs),
            "hash": ex.graph_hash,
            "in": ex.inputs,
            "out": ex.outputs,
            "step": host.s.step,
            "compiled": ex.compiled,
        }
        if ex.inputs < 0:  # a compile PT_XLA_DEBUG did not analyse: counts unknown (its dump tells "in")
            del record["in"], record["out"]
        if ex.graph_name:
            record["name"] = ex.graph_name
        if ex.computation_hash:
            record["chash"] = ex.computation_hash
        graph = host.s.graphs[ex.graph_hash] = GraphEntry(record["id"], record)
        if not ex.compiled:
            host.update(graph, tensors_note="compiled before capture started")
        host.s.changed.append(graph)
    elif ex.compiled and not graph.record.get("compiled"):
        host.update(graph, compiled=True)
    return graph
