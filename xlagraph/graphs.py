"""`list_graphs`: every graph of a source, parsed and canonicalized, grouped into variants.

A training loop that compiles once after warm-up produces one or two variants however many steps
it saves; every further variant is a recompile. Graphs with the same canonical fingerprint share a
variant letter (A, B, ..., Z, AA, AB, ...), assigned in order of first appearance, so `A` is the
first graph's variant and the first graph of each later letter is where the loop recompiled. The
same computation with its parameters or outputs in another order is a recompile too, of the same
computation: it gets the letter with a prime (A', A'') so both facts show at a glance.

An `XLA_SAVE_TENSORS_FILE` dump repeats the steady-state graph once per step, so graphs with the
same text are parsed once and only their summary is kept, never the parsed module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xlagraph.canonical import canonicalize
from xlagraph.parse.hlo import summarize_hlo
from xlagraph.parse.sources import Graph, open_source, read

__all__ = ["GraphListing", "GraphRow", "list_graphs", "variant_letter"]

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
    def unique(self) -> int:
        """How many canonically different graphs the source holds."""
        return len(self.variants)

    @property
    def unique_graph_hashes(self) -> int:
        """How many different PyTorch/XLA graph hashes the source names (0 when it names none)."""
        return len({r.graph_hash for r in self.rows if r.graph_hash})

    def first_of(self, variant: str) -> GraphRow:
        """The first graph of `variant`."""
        return next(r for r in self.rows if r.variant == variant)


@dataclass(frozen=True)
class _Summary:
    name: str
    instructions: int
    computations: int
    fingerprint: str
    order: str


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
        if quick is not None:
            return _Summary(*quick[:5])  # quick.notes: not listed yet
    module = read(graph)
    canon = canonicalize(module)
    return _Summary(
        module.name, module.instruction_count, len(module.computations), canon.fingerprint, canon.order
    )


def list_graphs(path: str, progress: Progress | None = None) -> GraphListing:
    """Parse and canonicalize every graph of `path`: a file, a save file or a dump directory.

    `progress(done, total)` is called after each graph. A graph that does not parse raises the
    reader's `InputError`, naming the file and line.
    """
    source = open_source(path)
    total = len(source.graphs)
    seen: dict[tuple[str, str], _Summary] = {}
    variants: dict[str, str] = {}
    orders: dict[str, dict[str, str]] = {}
    rows: list[GraphRow] = []
    for done, graph in enumerate(source.graphs, 1):
        key = (graph.format, graph.text)
        summary = seen.get(key)
        if summary is None:
            summary = seen[key] = _summarize(graph)
        letter = variants.setdefault(summary.fingerprint, variant_letter(len(variants)))
        # The same computation with its inputs or outputs in another order compiles again: A'.
        seen_orders = orders.setdefault(summary.fingerprint, {})
        variant = seen_orders.setdefault(summary.order, letter + "'" * len(seen_orders))
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
            )
        )
        if progress is not None:
            progress(done, total)
    return GraphListing(source.path, source.kind, tuple(rows), source.notes)
