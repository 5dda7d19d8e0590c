"""Read a capture folder back into `RunLog`s, one per process. Pure Python, no torch.

A run killed at any moment stays readable: a partial last journal line is ignored with a note,
and PT_XLA_DEBUG output the hook had not consumed yet (`pt_xla_debug.txt`, or the copy it was
reading) becomes one more step, its compiles paired with the dump files no graph claimed. Every
journal and meta field is validated (`records.py`): a bad record is skipped and counted in a
note. Files are read bounded (`XLAGRAPH_MAX_INPUT_MB`); a FIFO or device in place of one is
refused. A folder written by several runs (the same DIR used again) is split into runs by time:
`read_capture_runs`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from xlagraph.capture import files as fmt
from xlagraph.capture.records import check_meta, check_record
from xlagraph.dynamolog import DynamoLog
from xlagraph.errors import InputError, XlagraphError
from xlagraph.ir import Frame
from xlagraph.parse.compressed import compressed_twin
from xlagraph.parse.pt_xla_debug import Execution, fold_executions, parse_pt_xla_debug
from xlagraph.parse.shared import current as current_shared
from xlagraph.parse.sources import read_bytes
from xlagraph.parse.tensors_report import parse_tensors_report
from xlagraph.parse.torch_trace import read_torch_trace
from xlagraph.progress import counted
from xlagraph.runlog import EagerCompile, GraphRecord, Holder, LiveTensor, RunLog, Step, Sync
from xlagraph.source_paths import add_capture_roots, portable_path

__all__ = ["CaptureRun", "is_capture", "read_capture", "read_capture_runs", "read_process"]


@dataclass(frozen=True)
class CaptureRun:
    """The processes of one run found in a capture folder; `number` counts runs from 1 in the
    order they started; `start` is the wall-clock start (seconds since the epoch, 0 unknown)."""

    number: int
    start: float
    logs: tuple[RunLog, ...]


_RANK_NOTE = re.compile(r"^rank ([0-9]{1,9}) of ")


class _Process(NamedTuple):
    log: RunLog
    start: float
    end: float


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
    return _read_process(p).log


def read_capture_runs(path: str | os.PathLike[str]) -> tuple[CaptureRun, ...]:
    """The runs of a capture folder, oldest first. Processes belong to one run when their
    lifetimes overlap (every process of an `xmp.spawn` or torchrun run is alive at once), or when
    one is a rank the run's world still lacks; a process that started after all earlier ones had
    ended (the folder used again, a container restarted in place) begins a new run."""
    p = Path(path)
    if not p.is_dir():
        raise InputError(str(p), "not a capture folder (no such directory)")
    if _is_process_dir(p):
        proc = _read_process(p)
        return (CaptureRun(1, proc.start, (proc.log,)),)
    procs = [
        _read_process(c) for c in counted("reading process", [c for c in _children(p) if _is_process_dir(c)])
    ]
    if not procs:
        raise InputError(str(p), "not a capture folder: no <host>-<pid> folder with a journal.jsonl")
    groups: list[list[_Process]] = []
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


def _completes(group: list[_Process], proc: _Process) -> bool:
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


@dataclass
class _Acc:
    """Journal contents as they are read."""

    frames: dict[int, tuple[Frame, ...]] = field(default_factory=dict)
    causes: dict[int, str] = field(default_factory=dict)
    graphs: dict[int, dict[str, Any]] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    start: dict[str, Any] = field(default_factory=dict)
    end: dict[str, Any] | None = None
    rank: int | None = None
    world: int | None = None
    cwd: str = ""  # an older capture's recorded working directory: its user paths are under it


def _read_process(p: Path) -> _Process:
    acc = _Acc()
    meta = _read_meta(p, acc)
    acc.cwd = str(meta.get("cwd") or "")
    add_capture_roots(capture_roots(meta))
    _read_journal(p / fmt.JOURNAL, acc)
    _read_leftover_debug(p, acc, int(meta.get("debug_level", 2) or 0))
    rank = acc.rank if acc.rank is not None else meta.get("rank")
    world = acc.world if acc.world is not None else meta.get("world_size")
    notes: list[str] = []
    if rank is not None:
        notes.append(f"rank {rank} of {world}")
    for note in [*meta.get("notes", []), *acc.notes]:
        if note not in notes:
            notes.append(note)
    joined = _joined_steps(acc)
    syncs, steps = _syncs_and_steps(acc, joined)
    if not acc.steps and not acc.start and isinstance(meta.get("compiled_calls"), int):
        # no torch_xla (a CPU or GPU backend): a step is a call of a compiled function from the
        # line that called one first (the loop's); calls from other lines are evaluation passes
        n = meta["compiled_calls"]
        sites = [s for s in meta.get("compiled_call_sites") or () if isinstance(s, list) and len(s) == 3]
        if sites and isinstance(sites[0][2], int) and 0 < sites[0][2] < n:
            file, line, n = sites[0]
            notes.append(
                f"a step is a call of the compiled function at {file}:{line}; "
                f"{meta['compiled_calls'] - n} call(s) from other lines (evaluation passes?) are not steps"
            )
        steps = [Step(index=i, start=0.0, end=0.0) for i in range(n)]
    dynamo = _read_dynamo(p, joined, notes)
    live = meta.get("start_time") and not meta.get("clean_exit")
    if live and not steps and not acc.steps and not acc.start and dynamo is not None:
        # no torch_xla, and the run has not ended (or was killed): its calls were never counted;
        # the steps are those dynamo's record reached
        reached = [c.step for c in dynamo.compiles if c.step is not None]
        if reached:
            steps = [Step(index=i, start=0.0, end=0.0) for i in range(max(reached) + 1)]
            notes.append(f"the run had not ended: {len(steps)} step(s), as far as dynamo's record goes")
    if fallback := _fallback_note(acc):
        notes.append(fallback)
    graphs = {g["hash"]: _graph_record(p, g, notes) for g in acc.graphs.values() if g.get("hash")}
    compiles = _compiles_reported(acc, notes)
    eager_reported = (acc.end or {}).get("eager_compiles")
    log = RunLog(
        source=str(p),
        kind="capture",
        process=p.name,
        syncs=tuple(syncs),
        graphs=graphs,
        steps=tuple(steps),
        compiles_reported=compiles,
        notes=tuple(notes),
        dynamo=dynamo,
        eager=_eager(p, joined),
        eager_compiles_reported=int(eager_reported) if eager_reported is not None else None,
    )
    start = float(meta.get("start_time") or acc.start.get("t") or 0.0)
    last = max((float(r.get("t1", 0.0)) for r in acc.steps), default=0.0)
    end = float(meta.get("end_time") or (acc.end or {}).get("t") or start + last)
    return _Process(log, start, max(end, start))


def capture_roots(meta: dict[str, Any]) -> list[str]:
    """The capturing machine's working directory and import roots that a killed run's meta.json
    keeps (a clean exit leaves "." and none): what its unpaired dumps' paths are relative to."""
    cwd = meta.get("cwd")
    roots = [cwd] if isinstance(cwd, str) and cwd != "." else []
    extra = meta.get("import_roots")
    return roots + [r for r in extra if isinstance(r, str)] if roots and isinstance(extra, list) else roots


def process_roots(proc_dir: str) -> list[str]:
    """`capture_roots` of a process folder's meta.json; none when it is missing or unreadable."""
    try:
        meta, _ = check_meta(json.loads(read_bytes(Path(proc_dir) / fmt.META).decode("utf-8")))
    except Exception:  # (no meta.json, or not JSON: the reader of the capture says so)
        return []
    return capture_roots(meta)


def _read_meta(p: Path, acc: _Acc) -> dict[str, Any]:
    path = p / fmt.META
    if not os.path.lexists(path):
        acc.notes.append(f"{fmt.META} missing")
        return {}
    data = read_bytes(path)
    try:
        raw = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as e:
        acc.notes.append(f"{fmt.META} unreadable ({_reason(e)}); ignored")
        return {}
    _check_format(path, raw, acc)
    meta, dropped = check_meta(raw)
    acc.notes.extend(dropped)
    return meta


def _check_format(path: Path, raw: Any, acc: _Acc) -> None:
    """Another tool's folder is refused by name; a newer xlagraph's capture is read as far as this
    reader knows its format (records it does not know are skipped), and says so."""
    if not isinstance(raw, dict):
        return
    kind = raw.get("format")
    if kind is not None and kind != fmt.FORMAT:
        why = f"not an xlagraph capture (format {str(kind)[:40]!r}, not {fmt.FORMAT!r})"
        raise InputError(str(path), why)
    version = raw.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > fmt.VERSION:
        acc.notes.append(
            f"written by a newer xlagraph (capture format {version}; this one reads {fmt.VERSION}, "
            f"xlagraph {str(raw.get('xlagraph', '?'))[:20]} wrote it): read as far as this version "
            "knows; upgrade xlagraph to read all of it"
        )


def _reason(e: BaseException) -> str:
    return "nested too deeply" if isinstance(e, RecursionError) else " ".join(str(e).split())[:80]


def _read_journal(path: Path, acc: _Acc) -> None:
    if not os.path.lexists(path):
        acc.notes.append(f"{fmt.JOURNAL} missing: the process stopped before its first record")
        return
    lines = read_bytes(path).split(b"\n")
    last = len(lines) - 1
    skipped: list[tuple[int, str]] = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError) as e:
            if n - 1 == last:  # no newline after it: cut short by a kill
                acc.notes.append(
                    f"{fmt.JOURNAL}:{n}: the last record is incomplete (the run was killed while writing "
                    "it); ignored"
                )
            else:
                skipped.append((n, f"not JSON ({_reason(e)})"))
            continue
        why = check_record(record)
        if why:
            skipped.append((n, why))
            continue
        _apply(record, acc)
    if skipped:
        n, why = skipped[0]
        more = f"; {len(skipped) - 1} more" if len(skipped) > 1 else ""
        acc.notes.append(
            f"{fmt.JOURNAL}: {len(skipped)} bad record(s) skipped (line {n}: {why}{more}); "
            "what they recorded is missing from this report"
        )


def _apply(r: dict[str, Any], acc: _Acc) -> None:
    kind = r.get("k")
    if kind == fmt.STEP:
        acc.steps.append(r)
    elif kind == fmt.GRAPH:
        acc.graphs.setdefault(r["id"], {}).update({k: v for k, v in r.items() if k != "k"})
    elif kind == fmt.FRAMES:
        acc.frames[r["id"]] = tuple(Frame(f[0], portable_path(f[1], acc.cwd), f[2]) for f in r["v"])
    elif kind == fmt.CAUSE:
        acc.causes[r["id"]] = r["v"]
    elif kind == fmt.NOTE:
        acc.notes.append(r["v"])
    elif kind == fmt.START:
        acc.start = r
    elif kind == fmt.END:
        acc.end = r
    elif kind == fmt.RANK:
        acc.rank, acc.world = r.get("rank"), r.get("world")


def _read_leftover_debug(p: Path, acc: _Acc, debug_level: int) -> None:
    """What torch_xla wrote after the last step record of a run that did not exit cleanly."""
    if acc.end is not None:
        return
    # The journal's last step says how far the current file was read ("o"); a file being
    # renamed away when the run died (DEBUG_READING) is the older one, read from that offset.
    offset = acc.steps[-1].get("o", 0) if acc.steps else 0
    data = b""
    for name in (fmt.DEBUG_READING, fmt.DEBUG_FILE):
        if os.path.lexists(p / name):
            data += read_bytes(p / name)[offset:]
            offset = 0
    text = data.decode("utf-8", errors="replace")
    events, rest = parse_pt_xla_debug(text)
    executions, pending = fold_executions(events, None, debug_level >= 2)
    if pending is not None:
        executions.append(
            Execution(
                pending.graph_hash, True, pending.cause, pending.frames, pending.inputs, pending.outputs
            )
        )
    if rest.strip():
        acc.notes.append(f"{fmt.DEBUG_FILE}: the last PT_XLA_DEBUG block is incomplete; ignored")
    if not executions:
        return
    known = {g.get("hash"): gid for gid, g in acc.graphs.items()}
    frame_ids = {v: k for k, v in acc.frames.items()}
    cause_ids = {v: k for k, v in acc.causes.items()}
    claimed = {g.get("module") for g in acc.graphs.values()}
    hlo = p / fmt.HLO_DIR
    try:
        # A dump compressed since (`xz hlo/*.txt`) is named as the journal would: read through its twin.
        plain = {n.removesuffix(".xz").removesuffix(".gz") for n in os.listdir(hlo)}
        free = sorted(
            (n for n in plain if n.endswith(fmt.BEFORE_SUFFIX) and f"{fmt.HLO_DIR}/{n}" not in claimed),
            key=fmt.dump_order,
        )
    except OSError:
        free = []
    entries = []
    for ex in executions:
        gid = known.get(ex.graph_hash)
        if gid is None:
            gid = known[ex.graph_hash] = max(acc.graphs, default=-1) + 1
            acc.graphs[gid] = {"id": gid, "hash": ex.graph_hash, "in": ex.inputs, "out": ex.outputs}
        graph = acc.graphs[gid]
        if ex.compiled:
            graph["compiled"] = True
            if free and not graph.get("module"):
                graph["module"] = f"{fmt.HLO_DIR}/{free.pop(0)}"
            graph.setdefault("tensors_note", "compiled after the last step the capture recorded")
        # torch_xla's text names the user's files by absolute path: relative to the run's cwd, as
        # the journal's frames (so they find the stored sources wherever the capture is read).
        frames = tuple(f._replace(file=portable_path(f.file, acc.cwd)) for f in ex.frames)
        fid = frame_ids.setdefault(frames, len(acc.frames))
        acc.frames[fid] = frames
        cid = cause_ids.setdefault(ex.cause, len(acc.causes))
        acc.causes[cid] = ex.cause
        entries.append([gid, int(ex.compiled), cid, fid])
    last = acc.steps[-1] if acc.steps else {"i": -1, "t1": 0.0}
    t1 = last.get("t1", 0.0)
    acc.steps.append(
        {
            "i": last["i"] + 1,
            "t0": t1,
            "t1": t1,
            "e": entries,
            "open": True,
            "leftover": True,
        }
    )
    acc.notes.append(
        f"{len(executions)} graph execution(s) after the last recorded step were read from the leftover "
        f"{fmt.DEBUG_FILE} ({_why_unfinished(acc)}); they form step {last['i'] + 1}"
    )


def _why_unfinished(acc: _Acc) -> str:
    if any("capture disabled after error" in n for n in acc.notes):
        return "capture was disabled after an error"
    return "the run did not exit cleanly"


# torch_xla counts `.item()` among its fallbacks: a sync, not an op it cannot lower (a sync inside
# the step is a graph break; after the step's sync it costs nothing).
_NOT_FALLBACKS = frozenset({"aten::_local_scalar_dense"})


def _fallback_note(acc: _Acc) -> str:
    """aten ops torch_xla ran on the CPU (the steps' `fb` counts): each cuts the step's graph.
    `.item()` is not one of them, although torch_xla counts it."""
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    for r in acc.steps:
        fb = r.get("fb")
        if not isinstance(fb, dict):
            continue
        for name, n in fb.items():
            if name in _NOT_FALLBACKS:
                continue
            if isinstance(name, str) and isinstance(n, int) and n > 0:
                counts[name] = counts.get(name, 0) + n
                first.setdefault(name, int(r.get("i", 0)))
    if not counts:
        return ""
    ops = ", ".join(
        f"{name.removeprefix('aten::')} ({n} time(s) from step {first[name]})" for name, n in counts.items()
    )
    return (
        f"aten ops ran on the CPU (torch_xla's fallback for ops it does not lower): {ops}; each one cuts "
        "the step's graph where it runs (its inputs are computed and copied to the host), so torch_xla "
        "compiles and runs graphs no sync of yours shows, and its compile count includes them; use an op "
        "torch_xla lowers instead (another mode of interpolate / upsample, a different reduction), or move "
        "it out of the step (PT_XLA_DEBUG_LEVEL=1 names each fallback as it runs)"
    )


def _joined_steps(acc: _Acc) -> list[tuple[int, list[dict[str, Any]]]]:
    """The step records as the user's steps: (index, records). One `torch_xla.compile` call syncs
    twice, the ops pending before it (a graph named `<name>_clear_pending`) and then the function;
    torch.compile's openxla bridge syncs while it extracts and compiles a graph (records marked
    `bridge`); capture cuts a record where a compiled function is called before the user ever
    synced (`call`). Where the user has steps of their own (a sync), all of these join the next
    record. In a loop with none (inference calling a compiled function), each call is a step: a
    bridge record joins the call it is part of. Steps are numbered anew."""
    out: list[tuple[int, list[dict[str, Any]]]] = []
    held: list[dict[str, Any]] = []
    user_steps = any(not r.get("bridge") and not r.get("call") and not r.get("open") for r in acc.steps)
    calls = any(r.get("call") for r in acc.steps)
    for r in acc.steps:
        entries = r.get("e", [])
        names = [str(acc.graphs.get(int(e[0]), {}).get("name", "")) for e in entries]
        pending_only = entries and all(n.endswith("_clear_pending") for n in names)
        hold = pending_only or (r.get("bridge") and (user_steps or calls)) or (r.get("call") and user_steps)
        if hold and not r.get("leftover"):
            held.append(r)
            continue
        out.append((len(out), [*held, r]))
        held = []
    if held:
        out.append((len(out), held))
    return out


def _syncs_and_steps(
    acc: _Acc, joined: list[tuple[int, list[dict[str, Any]]]]
) -> tuple[list[Sync], list[Step]]:
    syncs: list[Sync] = []
    steps: list[Step] = []
    t0 = 0.0
    for index, records in joined:
        r = _merged(records)
        t1 = float(r.get("t1", 0.0))
        seconds = list(r.get("cs", []))
        entries = r.get("e", [])
        for gid, compiled, cid, fid in entries:
            graph = acc.graphs.get(int(gid), {})
            syncs.append(
                Sync(
                    index=len(syncs),
                    step=index,
                    graph_hash=str(graph.get("hash", "")),
                    compiled=bool(compiled),
                    cause=acc.causes.get(int(cid), ""),
                    frames=acc.frames.get(int(fid), ()),
                    wall_time=t1,
                    compile_seconds=float(seconds.pop(0)) if compiled and seconds else 0.0,
                )
            )
        steps.append(
            Step(
                index=index,
                start=float(r.get("t0", t0)),
                end=t1,
                compiles=int(r.get("c", sum(1 for e in entries if e[1]))),
                executions=int(r.get("x", len(entries))),
            )
        )
        t0 = t1
    return syncs, steps


def _eager(p: Path, joined: list[tuple[int, list[dict[str, Any]]]]) -> tuple[EagerCompile, ...]:
    """Eager mode's op compiles (`eo` of the step records), in the user's steps."""
    return tuple(
        EagerCompile(index, compressed_twin(str(p / module)) if module else "", float(seconds))
        for index, records in joined
        for r in records
        for module, seconds in r.get("eo", ())
    )


def _read_dynamo(
    p: Path, joined: list[tuple[int, list[dict[str, Any]]]], notes: list[str]
) -> DynamoLog | None:
    """The process's `torch_trace.log` (torch.compile's record), its compiles placed in the user's
    steps: a journal record's index becomes the step it joined and the first sync of that record."""
    path = p / fmt.TORCH_TRACE
    if not path.is_file():
        return None
    try:
        log = read_torch_trace(str(path))
    except InputError as e:
        notes.append(f"{fmt.TORCH_TRACE}: {e.message}; torch.compile's record is missing from this report")
        return None
    step_of: dict[int, tuple[int, int]] = {}  # journal record index -> (user step, its first sync)
    sync = 0
    for index, records in joined:
        for r in records:
            step_of[int(r["i"])] = (index, sync)
            sync += len(r.get("e", []))
    last = (len(step_of), sync)

    def place(i: int | None) -> tuple[int | None, int | None]:
        if i is None:
            return None, None
        return step_of.get(i, last) if step_of else (i, None)  # no journal: `i` is a call, a step

    compiles = []
    for c in log.compiles:
        (step, first), (end, _) = place(c.step), place(c.end_step)
        compiles.append(replace(c, step=step, end_step=end, sync=first))
    return replace(log, compiles=tuple(compiles), notes=tuple(log.notes))


def _merged(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One step record of several (a clear-pending sync and the call it belongs to)."""
    if len(records) == 1:
        return records[0]
    first, last = records[0], records[-1]
    merged = dict(last)
    merged["e"] = [e for r in records for e in r.get("e", [])]
    merged["cs"] = [c for r in records for c in r.get("cs", [])]
    if "t0" in first:
        merged["t0"] = first["t0"]
    for key in ("c", "x"):
        if all(key in r for r in records):
            merged[key] = sum(int(r[key]) for r in records)
        else:
            merged.pop(key, None)
    return merged


def _graph_record(p: Path, g: dict[str, Any], notes: list[str]) -> GraphRecord:
    module = compressed_twin(str(p / g["module"])) if g.get("module") else ""  # stored as .xz too
    if module and not os.path.isfile(module):  # a FIFO or device there is never opened
        notes.append(f"{g['module']}: listed in the journal but missing")
        module = ""
    if module and g.get("lines_module"):
        module = _with_lines(p, g, module, notes)
    elif g.get("lines_off"):
        why = g.get("lines_note") or (
            f"lowered at step {g['lines_step']}, not merged: the process did not exit cleanly"
            if "lines_step" in g
            else ""
        )
        notes.append(
            f"graph {g['hash']} (step {g.get('step', '?')}) was compiled while source lines were off "
            "and its lines were not recovered: its own instructions cite no line of yours"
            + (f" ({why})" if why else "")
        )
    tensors: tuple = ()
    tensors_note = str(g.get("tensors_note", ""))
    if g.get("tensors"):
        try:
            path = compressed_twin(str(p / g["tensors"]))
            shared = current_shared()  # the ranks of a pod hold the same reports
            tensors = shared.parsed("tensors", path, _read_tensors) if shared else _read_tensors(path)
        except InputError as e:
            tensors_note = f"{g['tensors']}: unreadable: {e.message}"
    elif not tensors_note and not g.get("compiled"):
        tensors_note = "compiled before capture started"
    if g.get("holders"):
        tensors = _with_holders(p, str(g["holders"]), tensors, notes)
    return GraphRecord(graph_hash=str(g["hash"]), module=module, tensors=tensors, tensors_note=tensors_note)


def _read_tensors(path: str) -> tuple[LiveTensor, ...]:
    return parse_tensors_report(read_bytes(path).decode("utf-8", errors="replace"))


_HOLDER_TEXT = ("path", "name", "kind", "function", "file")


def _with_holders(
    p: Path, name: str, tensors: tuple[LiveTensor, ...], notes: list[str]
) -> tuple[LiveTensor, ...]:
    """The live tensors with what kept each alive (`capture/_holders.py`), where recorded. An
    unreadable file costs the holders only, with a note; an entry of the wrong form is skipped."""
    try:
        records = json.loads(read_bytes(compressed_twin(str(p / name))).decode("utf-8", errors="replace"))
    except (InputError, ValueError, RecursionError) as e:
        notes.append(f"{name}: unreadable: {getattr(e, 'message', type(e).__name__)}")
        return tensors
    if not isinstance(records, list):
        notes.append(f"{name}: unreadable: not a list")
        return tensors
    by_id: dict[int, list[Holder]] = {}
    shapes: dict[int, object] = {}
    pending: set[int] = set()
    for r in records:
        if (
            isinstance(r, dict)
            and isinstance(r.get("id"), int)
            and all(isinstance(r.get(k), str) for k in _HOLDER_TEXT)
            and isinstance(r.get("line"), int)
        ):
            shapes.setdefault(r["id"], r.get("shape"))
            if r.get("pending") is True:
                pending.add(r["id"])
            by_id.setdefault(r["id"], []).append(
                Holder(
                    r["path"],
                    r["name"],
                    r["kind"],
                    r["function"],
                    portable_path(r["file"]),
                    r["line"],
                    portable_path(r["owner_file"]) if isinstance(r.get("owner_file"), str) else "",
                ),
            )
    if not by_id:
        return tensors
    if not tensors:  # no report at that step (too costly): the outputs-to-be the holders saw
        return tuple(
            LiveTensor(tid, shape, "", 1, (), tuple(hs), True)
            for tid, hs in by_id.items()
            if isinstance(shape := shapes.get(tid), str) and tid in pending
        )
    return tuple(
        replace(t, holders=tuple(by_id[t.id]), pending=t.id in pending) if t.id in by_id else t
        for t in tensors
    )


def _with_lines(p: Path, g: dict[str, Any], module: str, notes: list[str]) -> str:
    """The compiled dump of a graph compiled while source lines were off, with the lines capture
    merged in from a later run of it (`capture/lines.py`). Used in place of the dump only when
    xlagraph reads both as the same computation: a line is never bought with a changed graph."""
    from xlagraph.canonical import canonicalize
    from xlagraph.parse.sources import load_module

    lines = compressed_twin(str(p / g["lines_module"]))
    label = f"graph {g['hash']} (step {g.get('step', '?')})"
    try:
        if os.path.isfile(lines) and (
            canonicalize(load_module(lines)).fingerprint == canonicalize(load_module(module)).fingerprint
        ):
            notes.append(
                f"{label} was compiled while source lines were off; its lines come from its run at "
                f"step {g.get('lines_step', '?')}"
            )
            return lines
        why = "missing" if not os.path.isfile(lines) else "not the same graph"
    except InputError as e:
        why = f"unreadable: {e.message}"
    except (XlagraphError, RecursionError) as e:
        why = f"unreadable: {type(e).__name__}"
    notes.append(f"{label} was compiled while source lines were off; {g['lines_module']} {why}: not used")
    return module


def _compiles_reported(acc: _Acc, notes: list[str]) -> int | None:
    if acc.end is not None and "compiles" in acc.end:
        return int(acc.end["compiles"])
    if not acc.steps and not acc.start:
        return None
    counted = sum(int(r.get("c", 0)) for r in acc.steps if not r.get("leftover"))
    late = sum(e[1] for r in acc.steps if r.get("leftover") for e in r.get("e", ()))
    notes.append(
        f"{_why_unfinished(acc)}: torch_xla's compile count ({counted}) is the one at the last "
        f"recorded step"
        + (f", plus {late} compile(s) read from the leftover {fmt.DEBUG_FILE}" if late else "")
    )
    return counted + late
