"""`list_graphs`: every graph of a source, parsed and canonicalized, grouped into variants (the
letters, primes and a dump folder's stages: docs/json.md, `xlagraph graphs --json`). A save
file's graphs of the same text are parsed once and only their summary is kept, never the module."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from xlagraph._callable import make_callable
from xlagraph.capture.files import is_capture_dir
from xlagraph.errors import InputError
from xlagraph.ir import GraphInfo
from xlagraph.parse.hlo import summarize_hlo
from xlagraph.parse.sources import Graph, open_source, read
from xlagraph.parse.stablehlo import stablehlo_to_hlo

__all__ = ["GraphListing", "GraphRow", "list_graphs", "one_compile_stages", "variant_letter"]

_DUMP_MODULE = re.compile(r"^module_(\d+)\.")

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class GraphRow:
    """One graph of a source: where it is, what it is, and which variant it belongs to."""

    index: int
    name: str
    label: str
    instructions: int
    computations: int
    graph_hash: str
    fingerprint: str
    variant: str
    stage: str
    format: str
    compile: int = -1  # the compile this graph is a stage of (--xla_dump_to's module_NNNN); else index


@dataclass(frozen=True)
class GraphListing:
    """The graphs of `path` in order; `notes` are what the reader said about the source."""

    path: str
    kind: str
    rows: tuple[GraphRow, ...]
    notes: tuple[str, ...] = ()

    @property
    def variants(self) -> tuple[str, ...]:
        """Variant letters in order of first appearance."""
        return tuple(dict.fromkeys(r.variant for r in self.rows))

    @property
    def compiles(self) -> tuple[tuple[GraphRow, ...], ...]:
        """The rows grouped by compile, in order: one row each, but for a --xla_dump_to folder's
        stages of one compile (before and after optimizations), which are one group."""
        if self.kind != "dump-dir":
            return tuple((r,) for r in self.rows)
        groups: dict[int, list[GraphRow]] = {}
        for r in self.rows:
            groups.setdefault(r.compile, []).append(r)
        return tuple(tuple(g) for g in groups.values())

    @property
    def unique(self) -> int:
        """How many canonically different graphs the source holds."""
        return len(self.variants)

    @property
    def unique_graph_hashes(self) -> int:
        """How many different PyTorch/XLA graph hashes the source names (0 when it names none)."""
        return len({r.graph_hash for r in self.rows if r.graph_hash})


@dataclass(frozen=True)
class _Summary:
    name: str
    instructions: int
    computations: int
    fingerprint: str
    order: str
    notes: tuple[str, ...] = ()  # the reader's: old or other-version spellings it read


def variant_letter(n: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA, 27 -> AB (bijective base 26, like spreadsheet columns).

    >>> [variant_letter(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)]
    ['A', 'B', 'Z', 'AA', 'AB', 'AZ', 'BA', 'ZZ', 'AAA']
    """
    if n < 0:
        raise ValueError(f"variant number must be 0 or more, got {n}")
    letters = ""
    n += 1
    while n:
        n, rest = divmod(n - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _summarize(graph: Graph) -> _Summary:
    if graph.format == "hlo":  # the compiled core alone, without building the module's IR
        quick = summarize_hlo(graph.text, graph.path, first_line=graph.first_line)
        return _Summary(*quick[:5], notes=tuple(quick.notes))
    if graph.format == "stablehlo":  # written as HLO text, then the same
        hlo, lines = stablehlo_to_hlo(graph.text, graph.path, first_line=graph.first_line)
        quick = summarize_hlo(hlo, graph.path, first_line=graph.first_line, line_map=lines)
        return _Summary(*quick[:5], notes=tuple(quick.notes))
    from xlagraph.canonical import canonicalize  # lazy IR: built in Python, then the core

    module = read(graph)
    canon = canonicalize(module)
    return _Summary(
        module.name,
        module.instruction_count,
        len(module.computations),
        canon.fingerprint,
        canon.order,
        tuple(module.notes),
    )


def list_graphs(path: str, progress: Progress | None = None) -> GraphListing:
    """Parse and canonicalize every graph of `path`: a file, a save file or a dump directory.

    `progress(done, total)` is called after each graph. A graph that does not parse raises the
    reader's `InputError`, naming the file and line.
    """
    try:
        source = open_source(path)
    except InputError:
        if is_capture_dir(path):  # as `report` on a dump folder points here, point there
            raise InputError(
                path,
                "a capture folder, not a --xla_dump_to directory: `xlagraph report "
                f"{shlex.quote(path)}` explains its recompiles and lists its graphs",
            ) from None
        raise
    total = len(source.graphs)
    compile_variant: dict[int, str] = {}  # a dump folder's compile -> the variant of its first stage
    seen: dict[tuple[str, str], _Summary] = {}
    variants: dict[str, str] = {}
    orders: dict[str, dict[str, str]] = {}
    rows: list[GraphRow] = []
    notes = dict.fromkeys(source.notes)  # ordered, each once
    for done, graph in enumerate(source.graphs, 1):
        key = (graph.format, graph.text)
        summary = seen.get(key)
        if summary is None:
            summary = seen[key] = _summarize(graph)
            notes.update(dict.fromkeys(n.replace(": note: ", ": ", 1) for n in summary.notes))
        compile_id = (
            _compile_of(graph.label, graph.info.index) if source.kind == "dump-dir" else graph.info.index
        )
        if compile_id in compile_variant:
            variant = compile_variant[compile_id]  # a later stage of a compile already listed
        else:
            letter = variants.setdefault(summary.fingerprint, variant_letter(len(variants)))
            # The same computation with its inputs or outputs in another order compiles again: A'.
            seen_orders = orders.setdefault(summary.fingerprint, {})
            variant = seen_orders.setdefault(summary.order, letter + "'" * len(seen_orders))
            compile_variant[compile_id] = variant
        rows.append(
            GraphRow(
                index=graph.info.index,
                name=summary.name,
                label=graph.label,
                instructions=summary.instructions,
                computations=summary.computations,
                graph_hash=graph.info.graph_hash,
                fingerprint=summary.fingerprint,
                variant=variant,
                stage=graph.info.stage,
                format=graph.format,
                compile=compile_id,
            )
        )
        if progress is not None:
            progress(done, total)
    return GraphListing(source.path, source.kind, tuple(rows), tuple(notes))


def _compile_of(label: str, index: int) -> int:
    """The compile a --xla_dump_to file belongs to: the NNNN of `module_NNNN.<name>.<stage>.txt`."""
    m = _DUMP_MODULE.match(os.path.basename(label))
    return int(m.group(1)) if m else -1 - index  # never equal to a dump's module number


def one_compile_stages(a: GraphInfo, b: GraphInfo) -> str:
    """A sentence when `a` and `b` are two stages of one --xla_dump_to compile (the graph before
    XLA's optimization passes and after them), else "": their differences are the compiler's
    rewrites (fusions, copies, layouts), not a recompile, and no cause names them."""
    if not (a.stage and b.stage and a.stage != b.stage):
        return ""
    ma, mb = _DUMP_MODULE.match(os.path.basename(a.label)), _DUMP_MODULE.match(os.path.basename(b.label))
    if ma is None or mb is None or ma.group(1) != mb.group(1):
        return ""
    return (
        f"A and B are one compile (module_{ma.group(1)}) at two stages, {a.stage} and {b.stage}: "
        "what differs is XLA's optimization passes (fusion, copies, layouts), not a recompile, so no "
        "cause is named. To see why the program recompiled, compare the same stage of two compiles "
        "(`xlagraph graphs DIR` lists them)."
    )


make_callable(__name__)  # `xlagraph.graphs(src)` calls xlagraph.api.graphs (xlagraph/_callable.py)
