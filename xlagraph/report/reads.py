"""Which graphs a report reads first, and the reading: `Modules` parses each graph once; the
candidate rule (`graphs_read`) says which earlier graphs a recompile compares with before any
is read. Nothing here imports the diagnosis, so a one-process report starts reading the graphs
its workers' first recompiles compare (`read_ahead`, on two threads, the core parsing without
the GIL) while the rest of the report's code is still being imported.
"""

from __future__ import annotations

import contextvars
import multiprocessing
import os
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from xlagraph.diagnose.frames import call_site, is_library, user_frames
from xlagraph.errors import XlagraphError
from xlagraph.ir import Module
from xlagraph.parse.hlo import LAZY_IR
from xlagraph.parse.shared import current as current_shared
from xlagraph.parse.sources import Source, open_source, read, replace_label, select, split_spec
from xlagraph.runlog import GraphRecord, RunLog, Sync

__all__ = [
    "MAX_CANDIDATES",
    "NEW_CALL_SITE",
    "NEW_SYNC_POINT",
    "Modules",
    "candidates",
    "earlier_graphs",
    "explained_alone",
    "first_syncs",
    "fork_workers",
    "graphs_read",
    "head_reads",
    "read_ahead",
    "report_workers",
]

MAX_CANDIDATES = 5
NEW_CALL_SITE = "nearest earlier graph: none from this call site"
# An implicit sync inside library code (transformers' mask helpers call .all() / .any()) at a
# library line no earlier graph of this call site synced at: another helper's graph, not a change.
NEW_SYNC_POINT = "nearest earlier graph: none synced at this library line"


class Modules:
    """Parses each graph once; a save file is split once however many graphs it holds."""

    def __init__(self, graphs: dict[str, GraphRecord]) -> None:
        self._graphs = graphs
        self._sources: dict[str, Source] = {}
        self._modules: dict[str, Module | str] = {}
        self.noted = False  # a module read says `file:line: note: ...`: its diffs name this file
        self._behind: tuple[threading.Thread, list[BaseException]] | None = None

    def get(self, graph_hash: str) -> Module | str:
        """The parsed module, or why there is none."""
        self._wait()
        if graph_hash not in self._modules:
            self._store(graph_hash, lambda: self._load(graph_hash))
        return self._modules[graph_hash]

    def _store(self, graph_hash: str, load: Callable[[], Module | str]) -> None:
        shared = current_shared()
        if shared is None:
            module = self._modules[graph_hash] = load()
        else:  # another process of the report may have read the same bytes
            module = self._modules[graph_hash] = shared.module(self.key(graph_hash), load, _shareable)
        self.noted = self.noted or (isinstance(module, Module) and bool(module.notes))

    def preload(self, hashes: Sequence[str], threads: int = 2) -> None:
        """Read these graphs now, on `threads` threads (the compiled reader parses without the
        GIL), each source file on one thread: a report reads them here before its worker
        processes fork, which inherit them. `get` then answers what it would have read (through
        the report's shared graphs as well); a graph that fails to read is left for `get` to fail
        on where it would have."""
        self._wait()
        shared = current_shared()
        groups: dict[str, list[str]] = {}
        for h in dict.fromkeys(hashes):
            record = self._graphs.get(h)
            if h in self._modules or record is None or not record.module:
                continue
            if shared is not None and (key := self.key(h)) is not None and key in shared.modules:
                continue  # `get` takes it from there
            groups.setdefault(split_spec(record.module)[0], []).append(h)

        def load(group: list[str]) -> list[tuple[str, Module | str]]:
            out = []
            for h in group:
                try:
                    out.append((h, self._load(h)))
                except Exception:  # `get` raises it again, where it would have
                    break
            return out

        with ThreadPoolExecutor(threads) as pool:
            for h, module in (x for got in pool.map(load, groups.values()) for x in got):
                self._store(h, lambda m=module: m)  # type: ignore[misc]

    def preload_behind(self, hashes: Sequence[str]) -> None:
        """`preload` on a thread of its own (with the caller's context: the report's shared
        graphs), returning at once: the caller goes on (importing the diagnosis) while the core
        parses. `get` and `preload` wait for it, and raise what it raised."""
        failed: list[BaseException] = []
        context = contextvars.copy_context()

        def run() -> None:
            try:
                context.run(self.preload, hashes)
            except BaseException as e:  # raised again by the reader that waits
                failed.append(e)

        thread = threading.Thread(target=run, name="xlagraph-preload", daemon=True)
        thread.start()
        self._behind = (thread, failed)

    def _wait(self) -> None:
        if self._behind is None:
            return
        (thread, failed), self._behind = self._behind, None
        thread.join()
        if failed:
            raise failed[0]

    def key(self, graph_hash: str) -> Hashable | None:
        """The graph's content key while a report shares work among processes, else None. None
        too where the report holds one process: no other asks for its graphs or choices, and
        the key costs a digest of every graph's file (3% of such a report's CPU)."""
        shared = current_shared()
        record = self._graphs.get(graph_hash)
        if shared is None or shared.processes == 1 or record is None:
            return None
        return shared.graph_key(graph_hash, record.module)

    def _load(self, graph_hash: str) -> Module | str:
        record = self._graphs.get(graph_hash)
        if record is None or not record.module:
            return "its HLO was not kept"
        spec = record.module
        try:
            path, index = split_spec(spec)
            source = self._sources.get(path)
            if source is None:
                source = self._sources[path] = open_source(path)
            graph = select(source, index, spec)
            # A recompile's diffs ask about a few instructions of each graph (its inputs, outputs
            # and changed pairs): each is built when first asked for (`LAZY_IR`), not all 99K of
            # every graph as it is read, which also holds the GIL less while two threads read.
            lazy = LAZY_IR.set(True)
            try:
                module = read(graph)
            finally:
                LAZY_IR.reset(lazy)
        except XlagraphError as e:
            return f"its HLO could not be read: {e}"
        except RecursionError:
            return f"its HLO is nested too deeply to analyze: {spec}"
        if source.kind not in ("hlo-file", "stablehlo-file", "lazy-ir-file"):
            module = replace_label(module, graph.label)
        elif not module.info.label:
            module = replace_label(module, spec)
        if not module.info.graph_hash and not graph_hash.startswith("text:"):
            module = replace(module, info=replace(module.info, graph_hash=graph_hash))
        return module


def _shareable(module: Module | str) -> bool:
    """A module other processes may use as theirs: read, and saying nothing that names its file
    (the reader's notes on old spellings do, and a diff repeats them)."""
    return isinstance(module, Module) and not module.notes


def candidates(target: Sync, earlier: list[tuple[str, Sync]]) -> tuple[list[tuple[str, Sync]], str]:
    """Earlier graphs from the same call site, most recent first, and how they were chosen."""
    frames = user_frames(target.frames)
    site = call_site(target.frames)
    same = [e for e in earlier if frames and user_frames(e[1].frames) == frames]
    point = _sync_point(target)
    if point and same:
        at_point = [e for e in same if _sync_point(e[1]) == point]
        if not at_point:
            return list(reversed(same)), NEW_SYNC_POINT
        same = at_point
    tiers = (
        (same, "same call site"),
        ([e for e in earlier if site and call_site(e[1].frames) == site], "same line, other callers"),
        (earlier, NEW_CALL_SITE),
    )
    for group, reason in tiers:
        if group:
            return list(reversed(group)), reason
    return [], ""


def _sync_point(sync: Sync) -> str:
    """`file:line` of the innermost frame when the sync happened inside library code, else ""."""
    if not sync.frames:
        return ""
    inner = sync.frames[0]
    return f"{inner.file}:{inner.line}" if is_library(inner) else ""


def graphs_read(target: Sync, earlier: list[tuple[str, Sync]]) -> list[str]:
    """The graphs `choose_baseline` reads first for `target`: its own and its nearest candidates
    (before `_same_name`, which reads graphs to filter them: one read here that the choice then
    passes over is only read early). Reads nothing."""
    ordered, _ = candidates(target, earlier)
    return [target.graph_hash, *(h for h, _ in ordered[:MAX_CANDIDATES])] if ordered else []


def earlier_graphs(target: Sync, first: dict[str, Sync]) -> list[tuple[str, Sync]]:
    """The graphs compiled before `target`, each with its first sync."""
    return [(h, s) for h, s in first.items() if s.index < target.index]


def first_syncs(syncs: Sequence[Sync]) -> tuple[dict[str, Sync], dict[str, Sync]]:
    """Each graph's first sync, and each compiled graph's first compile (in run order): every
    compile after the first is a recompile the report explains."""
    first: dict[str, Sync] = {}
    compiled: dict[str, Sync] = {}
    for s in syncs:
        first.setdefault(s.graph_hash, s)
        if s.compiled:
            compiled.setdefault(s.graph_hash, s)
    return first, compiled


def report_workers() -> int:
    """Processes that explain a report's recompiles: `XLAGRAPH_WORKERS`, else one per core this
    process may run on."""
    raw = os.environ.get("XLAGRAPH_WORKERS", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def explained_alone() -> bool:
    """The report holds one process (or shares nothing): its recompiles may go to workers."""
    shared = current_shared()
    return shared is None or shared.processes == 1


def fork_workers(recompiles: int) -> int:
    """Worker processes that explain `recompiles` recompiles of a process explained alone: 1
    (this process) where processes cannot fork."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return min(report_workers(), recompiles)


def chunk_heads(targets: Sequence[Sync], workers: int) -> tuple[int, range]:
    """Recompiles per worker (contiguous chunks), and the index of each later chunk's first."""
    chunk = -(-len(targets) // workers)
    return chunk, range(chunk, len(targets), chunk)


def head_reads(targets: Sequence[Sync], first: dict[str, Sync], workers: int) -> list[str]:
    """The graphs each later chunk's first recompile reads first: read before the fork, they
    are every worker's."""
    _, heads = chunk_heads(targets, workers)
    return [h for k in heads for h in graphs_read(targets[k], earlier_graphs(targets[k], first))]


def read_ahead(log: RunLog) -> Modules | None:
    """A one-process report's `Modules`, already reading (behind the caller) the graphs its
    workers' first recompiles compare; None where the report will not fork workers."""
    if not explained_alone():
        return None
    first, compiled = first_syncs(log.syncs)
    targets = list(compiled.values())[1:]
    workers = fork_workers(len(targets))
    if workers < 2:
        return None
    modules = Modules(log.graphs)
    modules.preload_behind(head_reads(targets, first, workers))
    return modules
