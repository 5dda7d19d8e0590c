"""One process folder read into a `RunLog`, with its lifetime (to group processes into runs)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from xlagraph.capture import files as fmt
from xlagraph.capture.reader.graphs import graph_record
from xlagraph.capture.reader.journal import JournalContents, read_journal
from xlagraph.capture.reader.leftover import read_leftover_debug
from xlagraph.capture.reader.meta import capture_roots, read_meta
from xlagraph.capture.reader.steps import (
    compiles_reported,
    eager_compiles,
    fallback_note,
    joined_steps,
    read_dynamo,
    syncs_and_steps,
)
from xlagraph.runlog import RunLog, Step
from xlagraph.source_paths import add_capture_roots


class ProcessLog(NamedTuple):
    log: RunLog
    start: float
    end: float


def read_process_log(p: Path) -> ProcessLog:
    acc = JournalContents()
    meta = read_meta(p, acc)
    acc.cwd = str(meta.get("cwd") or "")
    add_capture_roots(capture_roots(meta))
    read_journal(p / fmt.JOURNAL, acc)
    read_leftover_debug(p, acc, int(meta.get("debug_level", 2) or 0))
    rank = acc.rank if acc.rank is not None else meta.get("rank")
    world = acc.world if acc.world is not None else meta.get("world_size")
    notes: list[str] = []
    if rank is not None:
        notes.append(f"rank {rank} of {world}")
    for note in [*meta.get("notes", []), *acc.notes]:
        if note not in notes:
            notes.append(note)
    joined = joined_steps(acc)
    syncs, steps = syncs_and_steps(acc, joined)
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
    dynamo = read_dynamo(p, joined, notes)
    live = meta.get("start_time") and not meta.get("clean_exit")
    if live and not steps and not acc.steps and not acc.start and dynamo is not None:
        # no torch_xla, and the run has not ended (or was killed): its calls were never counted;
        # the steps are those dynamo's record reached
        reached = [c.step for c in dynamo.compiles if c.step is not None]
        if reached:
            steps = [Step(index=i, start=0.0, end=0.0) for i in range(max(reached) + 1)]
            notes.append(f"the run had not ended: {len(steps)} step(s), as far as dynamo's record goes")
    if fallback := fallback_note(acc):
        notes.append(fallback)
    graphs = {g["hash"]: graph_record(p, g, notes) for g in acc.graphs.values() if g.get("hash")}
    compiles = compiles_reported(acc, notes)
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
        eager=eager_compiles(p, joined),
        eager_compiles_reported=int(eager_reported) if eager_reported is not None else None,
    )
    start = float(meta.get("start_time") or acc.start.get("t") or 0.0)
    last = max((float(r.get("t1", 0.0)) for r in acc.steps), default=0.0)
    end = float(meta.get("end_time") or (acc.end or {}).get("t") or start + last)
    return ProcessLog(log, start, max(end, start))
