"""`watch`: a capture read while it is written, each recompile told once, in the report's words.

A `Watcher` polls a capture folder (one process folder, or many) and reads a process whose record
grew again as `report` reads it, complete journal lines only; which events it tells, in which
order, and how a finished capture replays: docs/watch.md. The analysis is `build_report`'s: a
recompile is explained as `report` explains it. The events are written by `render/watch.py` (a
line of text, or the report's recompile JSON schema).
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.capture.reader import is_capture, read_process
from xlagraph.errors import InputError, XlagraphError
from xlagraph.parse.sources import check_regular_file
from xlagraph.report.build import build_report
from xlagraph.report.model import Recompile, RunReport

__all__ = ["WatchEvent", "Watcher"]

_REREAD_S = 2.0  # a run not yet steady is read again at most this often when nothing compiled


@dataclass(frozen=True)
class WatchEvent:
    """One thing to tell: `kind` recompile | torch.compile | eager | steady | ranks | end, with what
    it is about (`subject`: a `Recompile`, a `DynamoEvent`, an `EagerStep`, or None) and its facts
    (`detail`); `expected` for warm-up, nothing to fix. `render/watch.py` writes it."""

    kind: str
    process: str
    step: int | None
    subject: Any = None
    detail: dict[str, Any] = field(default_factory=dict)
    expected: bool = False


@dataclass
class _Proc:
    path: Path
    sizes: tuple[int, ...] = ()
    read_at: float = 0.0  # when it was last read as a whole
    seen: set[tuple[str, ...]] = field(default_factory=set)
    steady: bool = False
    ended: bool = False
    report: RunReport | None = None


class Watcher:
    """Follows the capture at `path`. `poll()` returns what is new; `done` once every process
    has ended (cleanly, or its process is gone on this host)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.root = Path(path)
        if not self.root.is_dir():
            raise InputError(str(self.root), "not a capture folder (no such directory)")
        self.procs: dict[Path, _Proc] = {}
        self.told_ranks: set[tuple[str, str]] = set()

    @property
    def done(self) -> bool:
        return bool(self.procs) and all(p.ended for p in self.procs.values())

    def poll(self) -> list[WatchEvent]:
        if not self.procs and not is_capture(self.root):
            if not any(self.root.iterdir()) or _starting(self.root):
                return []  # (the run has not started yet, or is making its first folder)
            why = "not a capture folder: no <host>-<pid> folder with a journal.jsonl"
            raise InputError(str(self.root), why)
        for p in _process_dirs(self.root):
            self.procs.setdefault(p, _Proc(p))
        events: list[WatchEvent] = []
        for proc in self.procs.values():
            events += self._poll_one(proc)
        events += self._ranks()
        return events

    def _poll_one(self, proc: _Proc) -> list[WatchEvent]:
        if proc.ended:
            return []
        _refuse_special_files(proc.path)
        sizes = _sizes(proc.path)
        ended = _ended(proc.path)
        if sizes == proc.sizes and not ended:
            return []
        # A long run's journal grows every step: it is read again as a whole only when something was
        # compiled since (a graph record, dynamo's record grew, eager ops), at its end, or every
        # few seconds until it is steady.
        grown = _appended(proc.path / fmt.JOURNAL, proc.sizes[0] if proc.sizes else 0, sizes[0])
        compiled = any(m in grown for m in (b'"k":"graph"', b'"eo":', b'"k":"end"'))
        changed = not proc.sizes or sizes[1:] != proc.sizes[1:] or compiled or ended
        now = time.monotonic()
        if not changed and (proc.steady or now - proc.read_at < _REREAD_S):
            proc.sizes = sizes
            return []
        before, proc.sizes, proc.read_at = proc.sizes, sizes, now
        try:
            log = read_process(proc.path)
            report = build_report(log, explain=False)
            if any(_key(r) not in proc.seen for r in report.recompiles):
                report = build_report(log)  # explained only when something new is to be told
        except (XlagraphError, OSError, ValueError):
            if ended:  # nothing more will be written: what cannot be read is bad input
                raise
            proc.sizes = before  # (a file changing under the reader: read it all again next poll)
            return []
        proc.report = report
        events = _new_events(report, proc)
        if report.steady_from_step is not None and not proc.steady and not _pending(report, proc):
            proc.steady = True
            detail = {"variants": list(report.steady_variants)}
            events.append(WatchEvent("steady", report.process, report.steady_from_step, None, detail))
        if ended:
            proc.ended = True
            detail = {"steps": report.steps, "compiles": report.compiles}
            events.append(WatchEvent("end", report.process, report.steps, None, detail))
        return events

    def journal_read(self) -> int:
        """Bytes of journal told so far, summed over the processes (each poll has told every event
        in what it read)."""
        return sum(max(p.sizes[0], 0) for p in self.procs.values() if p.sizes)

    def reports(self) -> dict[str, RunReport]:
        """Each process's report as last read."""
        return {p.report.process: p.report for p in self.procs.values() if p.report is not None}

    def _ranks(self) -> list[WatchEvent]:
        """A graph one process compiled that another, already past that step, never did."""
        reports = [p.report for p in self.procs.values() if p.report is not None]
        if len(reports) < 2:
            return []
        compiled = {r.process: {v.graph_hash: v for v in r.variants if v.compiled} for r in reports}
        events = []
        for r in reports:
            for h, v in compiled[r.process].items():
                others = [o.process for o in reports if o is not r and o.steps > v.first_step]
                lacking = [o for o in others if h not in compiled[o]]
                if not lacking or (r.process, h) in self.told_ranks:
                    continue
                self.told_ranks.add((r.process, h))
                detail = {"variant": v.letter, "graph_hash": h, "call_site": v.call_site, "not_in": lacking}
                events.append(WatchEvent("ranks", r.process, v.first_step, None, detail))
        return events


def _new_events(report: RunReport, proc: _Proc) -> list[WatchEvent]:
    found: list[tuple[tuple[float, int], WatchEvent]] = []  # (where in the run, dynamo's first)
    for r in report.recompiles:
        if (key := _key(r)) in proc.seen:
            continue
        proc.seen.add(key)
        found.append(((r.sync, 1), WatchEvent("recompile", report.process, r.step, r, {}, r.expected)))
    if report.dynamo is not None:
        for e in report.dynamo.recompiles:
            if (key := ("dynamo", e.compile_id)) in proc.seen:
                continue
            proc.seen.add(key)
            event = WatchEvent("torch.compile", report.process, e.step, e, {}, e.expected)
            found.append(((_order(e.sync, e.step), 0), event))
    if report.eager is not None:
        for s in report.eager.steps:
            if (key := ("eager", str(s.step))) in proc.seen:
                continue
            proc.seen.add(key)
            # new ops (an evaluation pass) compile once each: expected
            fix = {"fix": report.eager.fix}
            event = WatchEvent("eager", report.process, s.step, s, fix, not s.recompiled)
            found.append(((_order(None, s.step), 0), event))
    return [e for _, e in sorted(found, key=lambda x: x[0])]


def _order(sync: int | None, step: int | None) -> float:
    return float(sync) if sync is not None else float(step or 0) * 1e6


def _key(r: Recompile) -> tuple[str, ...]:
    return ("xla", r.variant, str(r.sync))


def _pending(report: RunReport, proc: _Proc) -> bool:
    return any(_key(r) not in proc.seen for r in report.recompiles)


# A process's capture folder (`capture._env.process_dir_name`: host-pid, .N for a second run),
# made before its journal: XLA's dump folder and the fingerprints may come first.
_PROCESS_DIR = re.compile(r".+-\d+(\.\d+)?")


def _starting(root: Path) -> bool:
    """A run's process folder exists with no journal yet: the run is starting, not a wrong folder."""
    try:
        return any(c.is_dir() and _PROCESS_DIR.fullmatch(c.name) for c in root.iterdir())
    except OSError:
        return False


def _process_dirs(root: Path) -> list[Path]:
    if (root / fmt.JOURNAL).exists() or (root / fmt.META).exists():
        return [root]
    try:
        kids = [c for c in root.iterdir() if c.is_dir()]
    except OSError:
        return []
    return sorted(c for c in kids if (c / fmt.JOURNAL).exists() or (c / fmt.META).exists())


def _appended(path: Path, start: int, end: int) -> bytes:
    """The journal's bytes from `start` to `end` (what a run appended since the last look)."""
    if end <= start:
        return b"" if end == start else b'"k":"graph"'  # (shorter: a new file; read it all)
    if not path.is_file():  # (only a regular file is read here; the reader names anything else)
        return b""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read(min(end - start, 64 << 20))
    except OSError:
        return b""


def _refuse_special_files(p: Path) -> None:
    """A FIFO, device or socket in place of a capture file never becomes one: one line now (the
    run writing there cannot be waited for)."""
    for name in (fmt.JOURNAL, fmt.TORCH_TRACE, fmt.META):
        path = p / name
        if os.path.lexists(path):
            with suppress(FileNotFoundError):  # (removed since: the next poll looks again)
                if not stat.S_ISREG(os.stat(path).st_mode):
                    check_regular_file(str(path))


def _sizes(p: Path) -> tuple[int, ...]:
    out = []
    for name in (fmt.JOURNAL, fmt.TORCH_TRACE, fmt.META):
        try:
            out.append(os.stat(p / name).st_size)
        except OSError:
            out.append(-1)
    return tuple(out)


def _ended(p: Path) -> bool:
    """The process wrote its end (meta.json's clean_exit), or it is gone from this host."""
    path = p / fmt.META
    if not path.is_file() or path.is_symlink():  # (a FIFO would block the read; the reader refuses it)
        return False
    try:
        meta = json.loads(path.read_bytes()[: 1 << 20].decode("utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict):
        return False
    if meta.get("clean_exit"):
        return True
    pid, host = meta.get("pid"), meta.get("host")
    if isinstance(pid, int) and host == socket.gethostname():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True  # killed (SIGKILL, OOM): what it wrote is all there is
        except OSError:
            return False
    return False
