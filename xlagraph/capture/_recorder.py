"""The per-process recorder behind the step-marker hook: turns what torch_xla reports around each
step marker into journal records (how, and which module holds each concern: docs/development.md,
"Capture, inside")."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.capture._debug_stream import DebugStream, decode
from xlagraph.capture._dumps import scan_dumps
from xlagraph.capture._eager import eager_compiles, eager_count, eager_on
from xlagraph.capture._env import EnvPlan
from xlagraph.capture._journal import append_records, graph_records, write_meta
from xlagraph.capture._placement import MAX_SHARD_RECORDS, MarkSharding, rank_record, unwrap
from xlagraph.capture._settings import STEADY_MARKERS, Settings
from xlagraph.capture._source_lines import (
    adapt_source_lines,
    lines_auto_supported,
    merge_source_lines,
    probe_lines,
    resolve_probe,
)
from xlagraph.capture._state import GraphEntry, RunState
from xlagraph.capture._steps import record_step
from xlagraph.capture._stored_files import compress, make_portable, store_at_exit, store_new_sources
from xlagraph.capture._tensors_report import settle_guess, take_report
from xlagraph.capture._xla_counters import compile_metric, counters
from xlagraph.capture.stored_sources import Relativizer, portable_meta
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
        self.s.compiles, self.s.executes = counters(self.xlac)
        self.base = (self.s.compiles, self.s.executes, compile_metric(self.xlac)[0])
        self.s.eager_count = self.eager_base = eager_count(xlac)
        self.meta = dict(meta)
        self.paths = Relativizer.here()  # portable paths, and the sources to store
        self._stored: tuple[int, int] = (0, 0)  # what `paths` knew when sources were last stored
        self.meta.setdefault("notes", [])
        self.meta["notes"] = [*self.meta["notes"], *plan.notes]
        self._write_meta()
        self.fd = os.open(os.path.join(self.dir, fmt.JOURNAL), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.write(
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
        compiles, executes = counters(self.xlac)
        dc = compiles - s.compiles
        if not s.bridge_marker:
            s.user_markers += 1
        user_eager = eager_on(self.xlac) and not s.bridge_marker  # in eager mode a sync is a step
        # A user's sync after the bridge's records ends their step even where it runs nothing: the
        # bridge ran this iteration's graphs (its input sync, the cached forward) and left none.
        closes = s.joined_open and not s.bridge_marker
        if self.executions_reported and not before and not own and dc == 0 and not user_eager and not closes:
            # e.g. torch_xla.compile's marker that clears pending ops: not a step of its own. (Without
            # PT_XLA_DEBUG blocks the lagging counter cannot tell, so every marker is a step.)
            s.empty_markers += 1
            s.report = None
            settle_guess(s, compiled=False)
            s.overhead += time.perf_counter() - t
            return
        record_step(self, [*before, *own], len(before), t, compiles, executes, eager=eager)
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
        compiles, executes = counters(self.xlac)
        if not own and compiles == s.compiles and not eager:
            s.overhead += time.perf_counter() - t
            return
        record_step(self, own, 0, t, compiles, executes, eager=eager, call=True)
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
        compiles, executes = counters(self.xlac)
        if tail or compiles != s.compiles:  # (the execution counter lags: not a reason alone)
            record_step(self, tail, len(tail), t, compiles, executes, closed_by_marker=False, eager=eager)
        scan_dumps(self)
        if s.lowered:
            merge_source_lines(self)
        self.meta = store_at_exit(self, self.meta)
        compress(self)
        self.write(graph_records(self.s))
        count, total_ns = compile_metric(self.xlac)
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
        self.write([end])
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

    # -- graphs and the budget all stored files share (XLAGRAPH_MAX_MB) ------------------------

    def update(self, graph: GraphEntry, **fields: Any) -> None:
        """Change a graph's record; once it is in the journal, the change goes out as an update record."""
        graph.record.update(fields)
        if graph.written:
            graph.changes.update(fields)
            if graph not in self.s.changed:
                self.s.changed.append(graph)

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

    # -- where this process and its tensors sit ------------------------------------------------

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
        self.write([record])

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
        self.write([record])

    # -- files -----------------------------------------------------------------------------------

    def kept(self, path: str) -> None:
        """A dump the capture keeps is complete: its paths become portable now, not at exit."""
        make_portable(self, path)

    def sources_so_far(self) -> None:
        """After a step: the sources it cited first stored now (`_stored_files`)."""
        self._stored = store_new_sources(self, self._stored)

    def note(self, text: str) -> None:
        """A line for the report's notes: a journal record, and one more line in meta.json."""
        self.s.notes.append(text)
        self.meta["notes"].append(text)
        self.write([{"k": fmt.NOTE, "v": text}])
        self._write_meta()

    def write(self, records: list[dict[str, Any]]) -> None:
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
