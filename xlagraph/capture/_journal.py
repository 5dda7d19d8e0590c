"""Writing the journal: records appended one os.write at a time, meta.json replaced whole, and the
interning that keeps a stable loop to one short line per step (distinct frame lists, causes and
graphs are written once and referred to by index).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from xlagraph.capture import files as fmt

if TYPE_CHECKING:
    from xlagraph.capture._state import RunState
    from xlagraph.capture.stored_sources import Relativizer
    from xlagraph.ir import Frame
    from xlagraph.parse.pt_xla_debug import Execution

__all__ = ["append_records", "graph_records", "intern_cause", "intern_frames", "write_meta"]


def graph_records(s: RunState) -> list[dict[str, Any]]:
    """Graphs changed since the last call: full records of new graphs, update records
    ({"k", "id", changed fields}) of the others."""
    out = []
    for graph in s.changed:
        if not graph.written:
            out.append(dict(graph.record))
            graph.written = True
        elif graph.changes:
            out.append({"k": fmt.GRAPH, "id": graph.id, **graph.changes})
        graph.changes = {}
    s.changed = []
    return out


def intern_cause(causes: dict[str, int], cause: str, records: list[dict[str, Any]]) -> int:
    """The index of a cause text; its record goes into `records` the first time."""
    i = causes.get(cause)
    if i is None:
        i = causes[cause] = len(causes)
        records.append({"k": fmt.CAUSE, "id": i, "v": cause})
    return i


def intern_frames(
    frames: dict[tuple[tuple[Frame, ...], bool], int],
    ex: Execution,
    records: list[dict[str, Any]],
    paths: Relativizer | None = None,
) -> int:
    """The index of an execution's frame list; its record goes into `records` the first time,
    with portable paths (`paths`)."""
    key = (ex.frames, ex.frames_truncated)
    i = frames.get(key)
    if i is None:
        i = frames[key] = len(frames)
        v = paths.frames(ex.frames) if paths is not None else [list(f) for f in ex.frames]
        record: dict[str, Any] = {"k": fmt.FRAMES, "id": i, "v": v}
        if ex.frames_truncated:
            record["cut"] = True
        records.append(record)
    return i


def append_records(fd: int, records: list[dict[str, Any]]) -> None:
    """One os.write per call: a kill leaves at most the last line partial."""
    data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_meta(proc_dir: str, meta: dict[str, Any]) -> None:
    """meta.json, replaced whole: a reader never sees half of it."""
    path = os.path.join(proc_dir, fmt.META)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
    os.replace(tmp, path)
