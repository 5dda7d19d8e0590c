"""Where a capture folder's processes are, and how they group into runs: the reader's entry.

A capture folder holds one `<host>-<pid>` folder per process (or is one); `read_capture_runs`
splits a folder written by several runs into runs by time.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from xlagraph.capture import files as fmt
from xlagraph.capture.reader.process import ProcessLog, read_process_log
from xlagraph.errors import InputError
from xlagraph.progress import counted
from xlagraph.runlog import RunLog

__all__ = ["CaptureRun", "is_capture", "read_capture", "read_capture_runs", "read_process"]


@dataclass(frozen=True)
class CaptureRun:
    """The processes of one run found in a capture folder; `number` counts runs from 1 in the
    order they started; `start` is the wall-clock start (seconds since the epoch, 0 unknown)."""

    number: int
    start: float
    logs: tuple[RunLog, ...]


_RANK_NOTE = re.compile(r"^rank ([0-9]{1,9}) of ")


def is_capture(path: str | os.PathLike[str]) -> bool:
    """True for a capture folder or one of its process folders."""
    p = Path(path)
    if not p.is_dir():
        return False
    return _is_process_dir(p) or any(_is_process_dir(c) for c in _children(p))


def read_capture(path: str | os.PathLike[str]) -> list[RunLog]:
    """The RunLogs of a capture folder (ordered by rank, then folder name), or of one process
    folder. Processes that never ran a graph (a launcher that only spawned workers, a data
    loader worker that imported torch_xla) are left out of a capture folder's list. A folder
    holding several runs gives the processes of all of them: see `read_capture_runs`."""
    return [log for run in read_capture_runs(path) for log in run.logs]


def read_process(path: str | os.PathLike[str]) -> RunLog:
    """The RunLog of one process folder as it stands (a run still writing it: what is complete)."""
    p = Path(path)
    if not _is_process_dir(p):
        raise InputError(str(p), "not a capture process folder: no journal.jsonl or meta.json")
    return read_process_log(p).log


def read_capture_runs(path: str | os.PathLike[str]) -> tuple[CaptureRun, ...]:
    """The runs of a capture folder, oldest first. Processes belong to one run when their
    lifetimes overlap (every process of an `xmp.spawn` or torchrun run is alive at once), or when
    one is a rank the run's world still lacks; a process that started after all earlier ones had
    ended (the folder used again, a container restarted in place) begins a new run."""
    p = Path(path)
    if not p.is_dir():
        raise InputError(str(p), "not a capture folder (no such directory)")
    if _is_process_dir(p):
        proc = read_process_log(p)
        return (CaptureRun(1, proc.start, (proc.log,)),)
    procs = [
        read_process_log(c)
        for c in counted("reading process", [c for c in _children(p) if _is_process_dir(c)])
    ]
    if not procs:
        raise InputError(str(p), "not a capture folder: no <host>-<pid> folder with a journal.jsonl")
    groups: list[list[ProcessLog]] = []
    end = float("-inf")
    for proc in sorted(procs, key=lambda q: (q.start, q.log.process)):
        later = bool(proc.start and proc.start > end)
        if not groups or (later and not _completes(groups[-1], proc)):
            groups.append([])
        groups[-1].append(proc)
        end = max(end, proc.end)
    runs = []
    for number, group in enumerate(groups, 1):
        logs = [q.log for q in group]
        ran = [r for r in logs if r.steps or r.syncs or (r.dynamo and r.dynamo.compiles)]
        runs.append(CaptureRun(number, min(q.start for q in group), tuple(sorted(ran or logs, key=_order))))
    return tuple(runs)


_RANK_OF = re.compile(r"^rank ([0-9]{1,9}) of ([0-9]{1,9})$")


def _rank_world(run: RunLog) -> tuple[int, int] | None:
    """(rank, world size) from the reader's own `rank N of M` note, where both are known."""
    for n in run.notes:
        if m := _RANK_OF.match(n):
            return int(m.group(1)), int(m.group(2))
    return None


def _completes(group: list[ProcessLog], proc: ProcessLog) -> bool:
    """`proc` is a rank its launcher's world still lacks: a world of the same size whose ranks
    so far are all others. A loaded machine can start one rank after another has finished (a
    short job under torchrun); a rerun in the same folder brings a rank the world already has."""
    mine = _rank_world(proc.log)
    if mine is None or mine[1] < 2:
        return False
    theirs = [_rank_world(q.log) for q in group]
    return (
        all(r is not None and r[1] == mine[1] for r in theirs)
        and mine[0] not in {r[0] for r in theirs if r is not None}
        and len(theirs) < mine[1]
    )


def _order(run: RunLog) -> tuple[int, str]:
    """Rank first (from the reader's own `rank N of M` note), then folder name."""
    rank = next((int(m.group(1)) for n in run.notes if (m := _RANK_NOTE.match(n))), 1 << 30)
    return rank, run.process


def _children(p: Path) -> list[Path]:
    try:
        return sorted(c for c in p.iterdir() if c.is_dir())
    except OSError:
        return []


def _is_process_dir(p: Path) -> bool:
    # lexists: a FIFO or a dangling link in place of the journal is refused when read, by name.
    return os.path.lexists(p / fmt.JOURNAL) or os.path.lexists(p / fmt.META)
