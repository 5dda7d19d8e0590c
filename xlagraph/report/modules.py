"""A report's graphs, each read once: the HLO of every graph a recompile's diffs ask for, parsed
lazily (`LAZY_IR`) and shared among the report's processes (`parse.shared`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from xlagraph.errors import XlagraphError
from xlagraph.ir import Module
from xlagraph.parse.hlo import LAZY_IR
from xlagraph.parse.shared import current as current_shared
from xlagraph.parse.sources import Source, open_source, read, replace_label, select, split_spec
from xlagraph.runlog import GraphRecord

__all__ = ["Modules"]


class Modules:
    """Parses each graph once; a save file is split once however many graphs it holds."""

    def __init__(self, graphs: dict[str, GraphRecord]) -> None:
        self._graphs = graphs
        self._sources: dict[str, Source] = {}
        self._modules: dict[str, Module | str] = {}
        self.noted = False  # a module read says `file:line: note: ...`: its diffs name this file

    def get(self, graph_hash: str) -> Module | str:
        """The parsed module, or why there is none."""
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
