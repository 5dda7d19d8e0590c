"""A `RunLog` from a plain `XLA_SAVE_TENSORS_FILE` dump (FMT=hlo or text), the file a user may
already have (hlo-text-format.md 2.1).

torch_xla appends one block per graph execution, cached or not, so every block is one sync, in
order. What the dump does not say is inferred, and the log's notes say so:

* compiled: a block compiled when its Graph Hash appears for the first time (the dump has no
  cache counters; graphs compiled before the dump started or evicted from the cache are unknown);
* steps: an explicit step marker (`torch_xla.sync()`, `xm.mark_step()`, anything that calls them:
  a frame named `sync` / `mark_step` in torch_xla) ends a step; implicit syncs (`.item()`,
  `.cpu()`, `print`) belong to the step they interrupt. Without frames every sync is a step;
* the HLO of each graph is its first block (`PATH#K`); there is no live-tensor report.
"""

from __future__ import annotations

import hashlib

from xlagraph.diagnose.frames import is_library
from xlagraph.errors import InputError
from xlagraph.ir import Frame
from xlagraph.parse.sources import Graph, open_source
from xlagraph.runlog import GraphRecord, RunLog, Sync

__all__ = ["is_step_marker", "runlog_from_save_file"]

NO_TENSORS = "an XLA_SAVE_TENSORS_FILE dump has no live-tensor report (capture with XLAGRAPH_CAPTURE)"
NO_COUNTS = (
    "XLA_SAVE_TENSORS_FILE has no compile counters: a graph counts as compiled where its Graph Hash "
    "first appears"
)
_MARKERS = frozenset({"sync", "mark_step", "_xla_step_marker", "step_marker"})


def is_step_marker(frames: tuple[Frame, ...]) -> bool:
    """True when the sync came from a step marker (a torch_xla `sync`/`mark_step` frame)."""
    return any(f.function in _MARKERS and is_library(f) and "torch_xla" in f.file for f in frames)


def _graph_hash(graph: Graph) -> str:
    """The Graph Hash; dumps older than torch_xla 2.2 have none, then the text stands in."""
    if graph.info.graph_hash:
        return graph.info.graph_hash
    return "text:" + hashlib.sha1(graph.text.encode()).hexdigest()[:24]


def runlog_from_save_file(path: str) -> RunLog:
    """Read every block of an `XLA_SAVE_TENSORS_FILE` dump as one sync of one process."""
    source = open_source(path)
    if source.kind != "save-file":
        raise InputError(
            path,
            "not an XLA_SAVE_TENSORS_FILE dump (no `## BEGIN_GRAPH` blocks) nor a capture folder: "
            "for one graph use `xlagraph graphs`, for two `xlagraph diff A B`",
        )
    framed = any(g.info.frames for g in source.graphs)
    notes = [*source.notes, NO_COUNTS]
    if not framed:
        notes.append("the dump names no Python frames: every sync is counted as one step")
    elif not any(is_step_marker(g.info.frames) for g in source.graphs):
        notes.append("no sync came from torch_xla.sync()/mark_step(): every sync is counted as one step")
        framed = False
    if any(not g.info.graph_hash for g in source.graphs):
        notes.append("some blocks have no `Graph Hash:` line (torch_xla < 2.2): graphs told apart by text")
    graphs: dict[str, GraphRecord] = {}
    syncs: list[Sync] = []
    step = 0
    for k, graph in enumerate(source.graphs):
        h = _graph_hash(graph)
        compiled = h not in graphs
        if compiled:
            graphs[h] = GraphRecord(h, module=f"{path}#{k}", tensors_note=NO_TENSORS)
        syncs.append(Sync(index=k, step=step, graph_hash=h, compiled=compiled, frames=graph.info.frames))
        if not framed or is_step_marker(graph.info.frames):
            step += 1
    return RunLog(source=path, kind="save-file", syncs=tuple(syncs), graphs=graphs, notes=tuple(notes))
