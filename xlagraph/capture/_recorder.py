"""The per-process recorder behind the step-marker hook: turns what torch_xla reports around each
step marker into journal records.

Around every `_xla_step_marker` call (mark_step, torch_xla.sync, torch_xla.compile, the parallel
loaders) it reads torch_xla's counters, the PT_XLA_DEBUG blocks written since the last marker (one
per graph execution, implicit syncs included) and the new `--xla_dump_to` files, and appends one
step record. Distinct frame lists, causes and graphs are written once and referred to by index,
so a stable loop adds one short line per step. The live-tensor report is expensive (quadratic in
graph size), so it is taken only while it stays cheap, and kept only for a sync that compiled.

This is the one stateful piece of capture; everything it parses goes through the pure parsers.
torch_xla is passed in (`xlac` = `torch_xla._XLAC`), never imported here at module level.

`Recorder` coordinates; each concern lives beside it as plain functions or a small class:
`_settings` (the XLAGRAPH_* knobs), `_state` (what changes during the run), `_debug_stream` (reading
PT_XLA_DEBUG), `_dumps` (the --xla_dump_to folder), `_tensors_report` (the live-tensor report),
`_source_lines` (XLAGRAPH_SOURCE_LINES=auto), `_placement` (rank and mark_sharding records),
`_journal` (writing the journal and meta.json). The functions take the recorder as a `_host.Host`
(what they use of it: its state, settings, `note`, `update`, `fits` and `cap_reason`), so none of
them imports this module.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.capture._compress import compress_dumps
from xlagraph.capture._debug_stream import DebugStream, decode
from xlagraph.capture._dumps import scan_dumps
from xlagraph.capture._eager import eager_compiles, eager_count, eager_on
from xlagraph.capture._env import EnvPlan
from xlagraph.capture._journal import append_records, graph_records, intern_cause, intern_frames, write_meta
from xlagraph.capture._placement import MAX_SHARD_RECORDS, MarkSharding, rank_record, unwrap
from xlagraph.capture._settings import STEADY_MARKERS, Settings
from xlagraph.capture._source_lines import (
    adapt_source_lines,
    await_lines,
    lines_auto_supported,
    merge_source_lines,
    probe_lines,
    resolve_probe,
)
from xlagraph.capture._state import GraphEntry, RunState
from xlagraph.capture._tensors_report import attach_tensors, settle_guess, take_report
from xlagraph.capture.stored_sources import (
    Relativizer,
    budget_bytes,
    portable_dumps,
    portable_file,
    portable_meta,
    store_sources,
)
from xlagraph.parse.pt_xla_debug import Analysis, Execution, fold_executions, parse_pt_xla_debug

# Settings and STEADY_MARKERS live in _settings; the hook and tests import them from here.
__all__ = ["STEADY_MARKERS", "Recorder", "Settings"]


class Recorder:
    """One process's capture: the journal, meta.json and the run's state. The hook calls
    `before_marker`, `after_marker`, `record_mark_sharding` and `finish`, each through `guard`."""

    def __init__(
        self,
        plan: EnvPlan,
        xlac: Any,
        settings: Settings,
        meta: dict[str, Any],
        add_step_closure: Callable[[Callable[[], None]], None],
    ) -> None:
        self.plan = plan
        self.xlac = xlac
        self.add_step_closure = add_step_closure
        self.executions_reported = plan.debug_level >= 2  # Execution Analysis blocks, one per run
        self.lines_auto = lines_auto_supported(plan.source_lines_mode, xlac)  # see _source_lines
        self.awaiting: object | None = None  # token of the marker whose "after" has not run
        self.side: Any = None  # XLAGRAPH_FINGERPRINTS: runs its own graph after the step's sync
        self.on_recompile: Any = None  # XLAGRAPH_ON_RECOMPILE: _on_recompile.OnRecompile
        self.settings = settings
        self.pid = os.getpid()
        self.active = True
        self.failed = False
        self.lock = threading.RLock()
        self.t0 = time.perf_counter()
        self.dir = plan.proc_dir
        self.debug = DebugStream(
            plan.debug_file, os.path.join(self.dir, fmt.DEBUG_READING), plan.forward_debug
        )
        self.hlo_dir = plan.hlo_dir
        self.tensors_dir = os.path.join(self.dir, fmt.TENSORS_DIR)
        os.makedirs(self.dir, exist_ok=True)
        os.makedirs(self.tensors_dir, exist_ok=True)
        self.s = RunState()
        self.s.compiles, self.s.executes = self._counters()
        self.base = (self.s.compiles, self.s.executes, self._compile_metric()[0])
        self.s.eager_count = self.eager_base = eager_count(xlac)
        self.meta = dict(meta)
        self.paths = Relativizer.here()  # portable paths, and the sources to store
        self._stored: tuple[int, int] = (0, 0)  # what `paths` knew when sources were last stored
        self.meta.setdefault("notes", [])
        self.meta["notes"] = [*self.meta["notes"], *plan.notes]
        self._write_meta()
        self.fd = os.open(os.path.join(self.dir, fmt.JOURNAL), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._write(
            [
                {
                    "k": fmt.START,
                    "t": self.meta.get("start_time", time.time()),
                    "pid": self.pid,
                    "compiles": self.base[0],
                    "executions": self.base[1],
                }
            ]
        )

    # -- the hook's entry points, each run through `guard` ----------------------------------------

    def guard(self, fn: Callable[[], None]) -> None:
        """Run a capture step; an exception switches capture off and never reaches the user."""
        with self.lock:
            if not self.active or self.pid != os.getpid():
                return
            try:
                fn()
            except Exception as e:
                self.fail(e)

    def before_marker(self) -> None:
        """The step marker is about to run (its name was just looked up)."""
        if self.awaiting is not None:  # the last marker's closure never ran (a direct call)
            self.after_marker()
        s = self.s
        t = time.perf_counter()
        token = self.awaiting = object()
        self.add_step_closure(lambda: self._closure(token))
        s.markers += 1
        s.bridge_marker = _called_by_bridge()
        if s.markers == 1:
            self._record_rank()
        s.pre_size = self.debug.unread()
        take_report(self, t)
        s.probe = None
        if self.lines_auto and s.awaiting and s.lines_on:
            probe_lines(self)
        s.overhead += time.perf_counter() - t

    def _closure(self, token: object) -> None:
        if self.awaiting is token:
            self.guard(self.after_marker)
            if self.side is not None and self.active:
                self.side.after_sync(self)  # guarded there: a failure stops fingerprints only

    def after_marker(self) -> None:
        """The step marker returned: its graphs are compiled and their executions scheduled."""
        self.awaiting = None
        s = self.s
        t = time.perf_counter()
        if self.settings.fail_after and s.markers >= self.settings.fail_after:
            raise RuntimeError(f"XLAGRAPH_CAPTURE_FAIL_AFTER={self.settings.fail_after} test hook")
        data = self.debug.read()
        pre = min(s.pre_size, len(data))
        key = (s.carry, s.pending, pre, data)
        if key == s.last_read[0]:  # a stable loop writes the same text every step: parse it once
            before, own, s.carry, s.pending = s.last_read[1]
        else:
            events, rest = parse_pt_xla_debug(s.carry + decode(data[:pre]))
            before, s.pending = fold_executions(events, s.pending, self.executions_reported)
            events, s.carry = parse_pt_xla_debug(rest + decode(data[pre:]))
            own, s.pending = fold_executions(events, s.pending, self.executions_reported)
            s.last_read = (key, (before, own, s.carry, s.pending))
        eager = eager_compiles(self)  # before the step's graphs are paired with their dumps
        compiles, executes = self._counters()
        dc = compiles - s.compiles
        if not s.bridge_marker:
            s.user_markers += 1
        user_eager = eager_on(self.xlac) and not s.bridge_marker  # in eager mode a sync is a step
        if self.executions_reported and not before and not own and dc == 0 and not user_eager:
            # e.g. torch_xla.compile's marker that clears pending ops: not a step of its own. (Without
            # PT_XLA_DEBUG blocks the lagging counter cannot tell, so every marker is a step.)
            s.empty_markers += 1
            s.report = None
            settle_guess(s, compiled=False)
            s.overhead += time.perf_counter() - t
            return
        self._record_step([*before, *own], len(before), t, compiles, executes, eager=eager)
        settle_guess(s, compiled=any(ex.compiled for ex in own))
        s.overhead = 0.0
        s.report = None
        if self.lines_auto:
            resolve_probe(self, own)
            adapt_source_lines(self)

    def call_boundary(self) -> None:
        """A compiled function is called (its outermost call). Where the user has not synced yet,
        each call is a step (an inference loop that never syncs): the previous call's graphs are
        recorded as a step marked `call`; the reader joins such records into the user's own
        steps where there are any. Once the user syncs, calls are no boundaries."""
        s = self.s
        if s.user_markers or self.awaiting is not None:
            return
        t = time.perf_counter()
        data = self.debug.read()
        key = (s.carry, s.pending, data)
        if key == s.last_call_read[0]:  # a stable loop writes the same text every call: parse it once
            own, s.carry, s.pending = s.last_call_read[1]
        else:
            events, s.carry = parse_pt_xla_debug(s.carry + decode(data))
            own, s.pending = fold_executions(events, s.pending, self.executions_reported)
            s.last_call_read = (key, (own, s.carry, s.pending))
        eager = eager_compiles(self)
        compiles, executes = self._counters()
        if not own and compiles == s.compiles and not eager:
            s.overhead += time.perf_counter() - t
            return
        self._record_step(own, 0, t, compiles, executes, eager=eager, call=True)
        s.overhead = 0.0

    def finish(self) -> None:
        """At exit: read what torch_xla wrote after the last marker and close the journal."""
        if self.awaiting is not None:
            self.after_marker()
        if self.side is not None:
            self.side.finish(self)
        s = self.s
        t = time.perf_counter()
        data = self.debug.read()
        events, s.carry = parse_pt_xla_debug(s.carry + decode(data))
        tail, s.pending = fold_executions(events, s.pending, self.executions_reported)
        if s.pending is not None:  # a compile whose execution never came
            tail.append(_compiled_only(s.pending))
            s.pending = None
        eager = eager_compiles(self)
        compiles, executes = self._counters()
        if tail or compiles != s.compiles:  # (the execution counter lags: not a reason alone)
            self._record_step(tail, len(tail), t, compiles, executes, closed_by_marker=False, eager=eager)
        scan_dumps(self)
        if s.lowered:
            merge_source_lines(self)
        self._store_sources()
        self._compress()
        self._write(graph_records(self.s))
        count, total_ns = self._compile_metric()
        end = {
            "k": fmt.END,
            "t": time.time(),
            "compiles": count - self.base[2],
            "compile_seconds": round(total_ns / 1e9, 6),
            "executions": executes - self.base[1],
            "markers": s.markers,
            "empty_markers": s.empty_markers,
            "report_seconds": round(s.report_spent, 6),
        }
        if (eager_total := eager_count(self.xlac) - self.eager_base - s.eager_skipped) > 0:
            end["eager_compiles"] = eager_total  # torch_xla's EagerOpCompileTime, the user's ops
        if self.lines_auto:
            end["lines_off"] = s.lines_off_count
        if s.unpaired_dumps:
            self.note(
                f"{s.unpaired_dumps} compiled module(s) matched no graph execution (torch_xla compiles some "
                "op lowerings as graphs of their own): not kept"
            )
        self._write([end])
        self.meta.update(end_time=end["t"], clean_exit=True)
        self._write_meta()
        self.active = False
        os.close(self.fd)
        self.debug.close()  # all of it is in the journal now

    def fail(self, exc: BaseException) -> None:
        """Log once, switch off; the original step marker keeps working."""
        self.active = False
        if self.failed:
            return
        self.failed = True
        msg = f"disabled after error: {type(exc).__name__}: {exc}"
        print(f"xlagraph capture: {msg}", file=sys.stderr, flush=True)
        with suppress(Exception):
            self.note(f"capture {msg}")

    # -- steps ----------------------------------------------------------------------------------

    def _record_step(
        self,
        executions: list[Execution],
        own_start: int,
        t_end_perf: float,
        compiles: int,
        executes: int,
        closed_by_marker: bool = True,
        eager: list[list[Any]] | None = None,
        call: bool = False,
    ) -> None:
        s = self.s
        now = t_end_perf - self.t0
        records: list[dict[str, Any]] = []
        entries: list[list[int]] = []
        compiled: list[tuple[GraphEntry, Execution, bool]] = []
        for i, ex in enumerate(executions):
            graph = self._graph(ex)
            entries.append(
                [
                    graph.id,
                    int(ex.compiled),
                    intern_cause(s.causes, ex.cause, records),
                    intern_frames(s.frames, ex, records, self.paths),
                ]
            )
            if ex.compiled:
                compiled.append((graph, ex, i >= own_start))
                if self.lines_auto and not s.lines_on:
                    self.update(graph, lines_off=True)
                    if i >= own_start:  # run by a marker: its rerun can be lowered before the marker
                        await_lines(self, ex.graph_hash)
                if self.plan.hlo_dump:
                    s.compile_queue.append((ex.graph_hash, ex.inputs))
        step: dict[str, Any] = {
            "k": fmt.STEP,
            "i": s.step,
            "t1": round(now, 6),  # it started where the previous step ended
            "c": compiles - s.compiles,
            "e": entries,
        }
        if not self.executions_reported:  # else one entry per execution: len(e)
            step["x"] = executes - s.executes
        if compiles > s.compiles:
            step["cs"] = self._compile_seconds()
            s.last_compile_marker = s.markers
            s.compile_seconds += sum(step["cs"])
            s.compile_count += len(step["cs"])
        if eager:
            step["eo"] = eager
        if fallbacks := self._fallbacks():
            step["fb"] = fallbacks
        if (consumed := self.debug.consumed(s.carry)) is not None:
            step["o"] = consumed
        if not closed_by_marker:
            step["open"] = True
        elif call:  # a compiled function's call began: the previous call ended here
            step["call"] = 1
        elif s.bridge_marker:  # torch_xla's dynamo bridge synced, not the user: part of their step
            step["bridge"] = 1
        if s.overhead:
            step["ov"] = round(s.overhead + time.perf_counter() - t_end_perf, 6)
        if compiled:
            attach_tensors(self, compiled)
            scan_dumps(self)
        records.extend(graph_records(self.s))
        records.append(step)
        self._write(records)
        if self.on_recompile is not None:  # XLAGRAPH_ON_RECOMPILE=raise: the next boundary may wait
            self.on_recompile.step_written(s.step, compiles > s.compiles or bool(eager), self.fd)
        self._sources_so_far()
        s.step += 1
        s.compiles, s.executes = compiles, executes

    def _graph(self, ex: Execution) -> GraphEntry:
        graph = self.s.graphs.get(ex.graph_hash)
        if graph is None:
            record: dict[str, Any] = {
                "k": fmt.GRAPH,
                "id": len(self.s.graphs),
                "hash": ex.graph_hash,
                "in": ex.inputs,
                "out": ex.outputs,
                "step": self.s.step,
                "compiled": ex.compiled,
            }
            if ex.inputs < 0:  # a compile PT_XLA_DEBUG did not analyse: counts unknown (its dump tells "in")
                del record["in"], record["out"]
            if ex.graph_name:
                record["name"] = ex.graph_name
            if ex.computation_hash:
                record["chash"] = ex.computation_hash
            graph = self.s.graphs[ex.graph_hash] = GraphEntry(record["id"], record)
            if not ex.compiled:
                self.update(graph, tensors_note="compiled before capture started")
            self.s.changed.append(graph)
        elif ex.compiled and not graph.record.get("compiled"):
            self.update(graph, compiled=True)
        return graph

    def update(self, graph: GraphEntry, **fields: Any) -> None:
        """Change a graph's record; once it is in the journal, the change goes out as an update record."""
        graph.record.update(fields)
        if graph.written:
            graph.changes.update(fields)
            if graph not in self.s.changed:
                self.s.changed.append(graph)

    # -- the budget all stored files share (XLAGRAPH_MAX_MB) -----------------------------------

    def fits(self, size: int) -> bool:
        """Whether a file of `size` bytes may still be stored (XLAGRAPH_MAX_MB); notes the cap once."""
        s = self.s
        if s.stored_bytes + size <= self.settings.max_bytes:
            return True
        if not s.cap_noted:
            s.cap_noted = True
            self.note(
                f"XLAGRAPH_MAX_MB={self.settings.max_bytes / 2**20:g} reached at step {s.step}: "
                "no more HLO or live-tensor reports are kept; steps are still recorded"
            )
        return False

    def cap_reason(self, what: str) -> str:
        """The note a graph gets for a file the cap kept out."""
        return f"{what} not kept: capture reached XLAGRAPH_MAX_MB={self.settings.max_bytes / 2**20:g}"

    # -- torch_xla -------------------------------------------------------------------------------

    def _counters(self) -> tuple[int, int]:
        value = self.xlac._xla_counter_value
        executes = (value("ExecuteComputation") or 0) + (value("ExecuteReplicated") or 0)
        return value("UncachedCompile") or 0, executes

    def _fallbacks(self) -> dict[str, int]:
        """aten ops torch_xla ran on the CPU since the last step, and how often: each one cuts the
        step's graph and runs (and compiles) graphs no sync of the user's shows."""
        ops = getattr(self.xlac, "_get_executed_fallback_ops", None)
        if ops is None:
            return {}
        grown = {}
        for name in ops():
            count = self.xlac._xla_counter_value(name) or 0
            if count > self.s.fallbacks.get(name, 0):
                grown[name] = count - self.s.fallbacks.get(name, 0)
                self.s.fallbacks[name] = count
        return grown

    def _compile_metric(self) -> tuple[int, float]:
        data = self.xlac._xla_metric_data("CompileTime")
        return (int(data[0]), float(data[1])) if data else (0, 0.0)

    def _compile_seconds(self) -> list[float]:
        """Durations of the compiles since the last call, from the CompileTime metric's samples."""
        data = self.xlac._xla_metric_data("CompileTime")
        samples = [(ts, ns) for ts, ns in (data[2] if data else ()) if ts > self.s.compile_sample_ts]
        if samples:
            self.s.compile_sample_ts = samples[-1][0]
        return [round(ns / 1e9, 6) for _, ns in samples]

    def _record_rank(self) -> None:
        record = rank_record(self.meta.get("host"), os.environ, self.note)
        rank, size = record["rank"], record["world"]
        self.meta.update(rank=rank, world_size=size, rank_info={k: v for k, v in record.items() if k != "k"})
        local_rank = os.environ.get("PJRT_LOCAL_PROCESS_RANK", "0")
        if local_rank not in ("", "0"):
            self.meta["notes"].append(
                f"local rank {local_rank}: torch_xla writes PT_XLA_DEBUG analysis on local rank 0 only, "
                "so this process records step counters and HLO but no per-execution details"
            )
        self._write_meta()
        self._write([record])

    def record_mark_sharding(self, t: Any, mesh: Any, spec: Any, caller: Any) -> None:
        """One `mark_sharding` call, written once per distinct (line, tensor shape, mesh axes,
        spec, resulting sharding). Bounded (MAX_SHARD_RECORDS)."""
        s = self.s
        call = MarkSharding.of(self.xlac, t, mesh, spec, caller)
        key = call.key()
        if key in s.shardings:
            return
        if len(s.shardings) >= MAX_SHARD_RECORDS:
            if len(s.shardings) == MAX_SHARD_RECORDS:
                s.shardings[key] = -1
                self.note(f"more than {MAX_SHARD_RECORDS} distinct mark_sharding calls: later ones not kept")
            return
        s.shardings[key] = len(s.shardings)
        tensor = int(self.xlac._xla_get_tensor_id(unwrap(t)))
        record = call.record(s.shardings[key], s.step, tensor)
        record["frames"] = self.paths.frames(call.frames)
        self._write([record])

    # -- files -----------------------------------------------------------------------------------

    def kept(self, path: str) -> None:
        """A dump the capture keeps is complete: its paths become portable now, not at exit."""
        try:
            portable_file(path, self.paths)
        except OSError as e:  # (removed under us): exit tries again
            self.note(f"{os.path.basename(path)}: paths not made portable yet: {e}")

    def _sources_so_far(self) -> None:
        """After a step that cited a file or line not cited before: `sources/` stored again (new
        blobs only), so that a run killed before its end keeps the source its records cite."""
        known = (len(self.paths.original), sum(len(v) for v in self.paths.cited.values()))
        if known == self._stored:
            return
        self._stored = known
        try:
            store_sources(self.dir, self.paths, budget_bytes())
        except Exception as e:  # (a full disk): exit tries again
            self.note(f"sources not stored yet: {type(e).__name__}: {e}")

    def _store_sources(self) -> None:
        """At exit: dumps and meta.json with portable paths, and the source text frames cite
        (`stored_sources`); never a reason to lose the journal."""
        try:
            portable_dumps(self.dir, self.paths)
            index = store_sources(self.dir, self.paths, budget_bytes())
            self.meta = portable_meta(self.meta, self.dir, self.paths)
        except Exception as e:  # (a full disk, a file removed under us): the report reads fewer lines
            self.note(f"sources not stored: {type(e).__name__}: {e}")
            return
        if index["lines"]:
            self.note(
                f"sources: {len(index['lines'])} file(s) past the {budget_bytes() >> 20} MB budget "
                "(XLAGRAPH_SOURCES_MB) keep only their cited lines"
            )

    def _compress(self) -> None:
        """At exit, once the dumps' text is final: store them as .xz (`_compress`)."""
        if not self.settings.compress:
            return
        try:
            compress_dumps(self.dir)
        except Exception as e:  # (a full disk): what is not compressed stays plain text, as readable
            self.note(f"dumps not compressed: {type(e).__name__}: {e}")

    def note(self, text: str) -> None:
        """A line for the report's notes: a journal record, and one more line in meta.json."""
        self.s.notes.append(text)
        self.meta["notes"].append(text)
        self._write([{"k": fmt.NOTE, "v": text}])
        self._write_meta()

    def _write(self, records: list[dict[str, Any]]) -> None:
        append_records(self.fd, records)

    def _write_meta(self) -> None:
        """meta.json in portable form from the start (a killed run never reaches exit), but for
        `cwd` while the run lasts: the reader of a killed run makes the user's paths in the
        PT_XLA_DEBUG text and the dumps left unpaired relative to it. It becomes "." at a clean
        exit, when every dump is portable."""
        meta = portable_meta(self.meta, self.dir, self.paths)
        if self.meta.get("cwd") not in (None, "."):
            meta["cwd"] = self.meta["cwd"]
            # and the other import roots: a dump XLA wrote that the run never paired (killed
            # between the compile and its step's end) keeps absolute paths, read relative to them
            meta["import_roots"] = list(self.paths.other_roots)
        write_meta(self.dir, meta)


_BRIDGE = ("torch_xla/_dynamo/", "torch_xla\\_dynamo\\")


def _called_by_bridge(depth: int = 16) -> bool:
    """The step marker was called from torch_xla's dynamo bridge (its syncs while it extracts and
    compiles a graph), not by the user's code."""
    frame = sys._getframe(1)
    for _ in range(depth):
        if frame is None:
            return False
        if any(b in frame.f_code.co_filename for b in _BRIDGE):
            return True
        frame = frame.f_back
    return False


def _compiled_only(pending: Analysis) -> Execution:
    return Execution(pending.graph_hash, True, pending.cause, pending.frames, pending.inputs, pending.outputs)
