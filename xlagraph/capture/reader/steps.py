"""The journal's step records as the user's steps: syncs, steps, eager compiles, torch.compile's
compiles placed in them, and the notes on CPU fallbacks and on the compile count.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.capture.reader.journal import JournalContents, why_unfinished
from xlagraph.dynamolog import DynamoLog
from xlagraph.errors import InputError
from xlagraph.parse.compressed import compressed_twin
from xlagraph.parse.torch_trace import read_torch_trace
from xlagraph.runlog import EagerCompile, Step, Sync

# torch_xla counts `.item()` among its fallbacks: a sync, not an op it cannot lower (a sync inside
# the step is a graph break; after the step's sync it costs nothing).
_NOT_FALLBACKS = frozenset({"aten::_local_scalar_dense"})


def fallback_note(acc: JournalContents) -> str:
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


def joined_steps(acc: JournalContents) -> list[tuple[int, list[dict[str, Any]]]]:
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


def syncs_and_steps(
    acc: JournalContents, joined: list[tuple[int, list[dict[str, Any]]]]
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


def eager_compiles(p: Path, joined: list[tuple[int, list[dict[str, Any]]]]) -> tuple[EagerCompile, ...]:
    """Eager mode's op compiles (`eo` of the step records), in the user's steps."""
    return tuple(
        EagerCompile(index, compressed_twin(str(p / module)) if module else "", float(seconds))
        for index, records in joined
        for r in records
        for module, seconds in r.get("eo", ())
    )


def read_dynamo(
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


def compiles_reported(acc: JournalContents, notes: list[str]) -> int | None:
    if acc.end is not None and "compiles" in acc.end:
        return int(acc.end["compiles"])
    if not acc.steps and not acc.start:
        return None
    counted = sum(int(r.get("c", 0)) for r in acc.steps if not r.get("leftover"))
    late = sum(e[1] for r in acc.steps if r.get("leftover") for e in r.get("e", ()))
    notes.append(
        f"{why_unfinished(acc)}: torch_xla's compile count ({counted}) is the one at the last "
        f"recorded step"
        + (f", plus {late} compile(s) read from the leftover {fmt.DEBUG_FILE}" if late else "")
    )
    return counted + late
