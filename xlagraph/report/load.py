"""What `xlagraph report SRC` reads: a capture folder or a plain XLA_SAVE_TENSORS_FILE dump.

A capture folder is a directory holding `meta.json` or `journal.jsonl`, or whose subfolders do
(one per process of an `xmp.spawn` run); it is read by `xlagraph.capture.read_capture_runs`,
imported only when needed. Anything else must be an XLA_SAVE_TENSORS_FILE dump (`save.hlo.0`).

A capture folder used by several runs holds all of them; `load_source` picks one (`run`:
"latest", the default, "all", or a run number counted from 1 in start order) and says so in
`runs_note`, so `report` and `check` never mix the processes of two runs silently.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xlagraph.capture.files import CAPTURE_MARKERS, is_capture_dir
from xlagraph.errors import InputError
from xlagraph.report.savefile import runlog_from_save_file
from xlagraph.runlog import RunLog

if TYPE_CHECKING:
    from xlagraph.capture.reader import CaptureRun

__all__ = ["CAPTURE_MARKERS", "Loaded", "RunInfo", "is_capture_dir", "load_runs", "load_source", "parse_run"]

RUN_CHOICES = "latest, all or a run number (1 is the oldest)"


@dataclass(frozen=True)
class RunInfo:
    """One run of a capture folder: its number (1 the oldest), start, processes, and whether
    it is among the processes loaded."""

    number: int
    start: float
    processes: tuple[str, ...]
    selected: bool

    @property
    def started(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.start)) if self.start else "unknown"


@dataclass(frozen=True)
class Loaded:
    """What `load_source` read: the processes to report, every run found, and the sentence
    that says which run they are when the folder holds more than one ("" otherwise)."""

    logs: tuple[RunLog, ...]
    runs: tuple[RunInfo, ...] = ()
    runs_note: str = ""


def parse_run(value: str) -> str | int:
    """`--run`: "latest", "all" or a run number (ASCII digits, 1 or more)."""
    text = value.strip().lower()
    if text in ("latest", "all"):
        return text
    if text.isascii() and text.isdigit() and 0 < len(text) < 10 and int(text) > 0:
        return int(text)
    raise ValueError(f"--run must be {RUN_CHOICES}, got {value!r}")


def load_runs(src: str, run: str | int = "latest") -> tuple[RunLog, ...]:
    """One `RunLog` per process: several for a multi-process capture, one for a save file."""
    return load_source(src, run).logs


def load_source(src: str, run: str | int = "latest") -> Loaded:
    """Read `src` (a capture folder or an XLA_SAVE_TENSORS_FILE dump); for a capture folder
    written by several runs, keep the processes of `run` ("latest", "all" or a number)."""
    if not os.path.lexists(src):
        raise InputError(src, "no such file or directory")
    p = Path(src)
    if is_capture_dir(src):
        try:
            from xlagraph.capture.reader import read_capture_runs
        except ImportError as e:
            raise InputError(
                src, f"is a capture folder, but this installation cannot read captures ({e})"
            ) from None
        return _select(src, read_capture_runs(src), run)
    trace = _torch_trace(src)
    if trace is not None:
        return trace
    if p.is_dir():
        from xlagraph.report.ranks import rank_dir_runs  # per-rank dumps written without capture

        per_rank = rank_dir_runs(src)
        if per_rank is not None:
            return Loaded(per_rank)
        raise InputError(
            src,
            "not a capture folder (no meta.json or journal.jsonl in it or its subfolders); "
            "for a --xla_dump_to directory use `xlagraph graphs`",
        )
    if run not in ("latest", "all", 1):
        raise InputError(src, f"an XLA_SAVE_TENSORS_FILE dump holds one run; --run {run} does not apply")
    return Loaded((runlog_from_save_file(src),))


def _torch_trace(src: str) -> Loaded | None:
    """A `TORCH_TRACE` folder or file (torch's structured trace): torch.compile's half alone, one
    log per process, for users who have a trace and no capture."""
    from xlagraph.parse.torch_trace import is_torch_trace, read_torch_trace, read_torch_trace_dir

    if not is_torch_trace(src):
        return None
    traces = read_torch_trace_dir(src) if os.path.isdir(src) else [read_torch_trace(src)]
    note = "a torch structured trace (TORCH_TRACE): torch.compile's record only, no XLA graphs"
    return Loaded(
        tuple(
            RunLog(
                source=t.source,
                kind="torch-trace",
                process=os.path.basename(t.source),
                notes=(note,),
                dynamo=t,
            )
            for t in traces
        )
    )


def _select(src: str, runs: tuple[CaptureRun, ...], run: str | int) -> Loaded:
    count = len(runs)
    if isinstance(run, int) and run > count:
        raise InputError(src, f"--run {run}: the folder holds {count} run{'s' if count > 1 else ''}")
    chosen = runs if run == "all" else (runs[-1],) if run == "latest" else (runs[run - 1],)
    numbers = {r.number for r in chosen}
    info = tuple(
        RunInfo(r.number, r.start, tuple(log.process for log in r.logs), r.number in numbers) for r in runs
    )
    logs = tuple(log for r in chosen for log in r.logs)
    if not logs:
        raise InputError(src, "capture folder holds no recorded process")
    if count == 1:
        return Loaded(logs, info)
    listed = "; ".join(f"run {r.number} started {r.started} ({', '.join(r.processes)})" for r in info)
    if run == "all":
        which = f"all {count} are shown, each process named by its folder"
    else:
        number = chosen[0].number
        latest = " (the latest)" if number == count else ""
        which = f"showing run {number}{latest}; --run all or --run N for the others"
    return Loaded(logs, info, f"{src} holds {count} runs: {listed}; {which}")
