"""PT_XLA_DEBUG output the hook had not consumed when the run ended (`pt_xla_debug.txt`, or the
copy it was reading): one more step, its compiles paired with the dump files no graph claimed.
"""

from __future__ import annotations

import os
from pathlib import Path

from xlagraph.capture import files as fmt
from xlagraph.capture.reader.journal import JournalContents, why_unfinished
from xlagraph.parse.input_files import read_bytes
from xlagraph.parse.pt_xla_debug import Execution, fold_executions, parse_pt_xla_debug
from xlagraph.source_paths import portable_path


def read_leftover_debug(p: Path, acc: JournalContents, debug_level: int) -> None:
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
        f"{fmt.DEBUG_FILE} ({why_unfinished(acc)}); they form step {last['i'] + 1}"
    )
