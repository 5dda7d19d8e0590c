"""`load` and `load_all`: graphs as `Module` -> `Computation` -> `Instruction`, and as networkx.

These are views over the reader's IR (`xlagraph.ir`), which the engine keeps using: a `Module`
holds it (`Module.ir`) and builds a computation's `Instruction`s only when they are first asked
for, so loading a 600K-instruction graph costs what the CLI pays. networkx is imported by
`to_networkx` alone, never at start-up.

The networkx graph (nodes, edges and their attributes) is docs/api.md ("Graphs as networkx").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import xlagraph.ir as xir
from xlagraph.errors import reading

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Computation", "Instruction", "Module", "graphml_text", "load", "load_all", "node_id"]


def node_id(computation: str, name: str) -> str:
    """The key of an instruction in `Module.to_networkx()`.

    >>> node_id("main.5", "add.3")
    'main.5/add.3'
    """
    return f"{computation}/{name}"


@dataclass(frozen=True, slots=True)
class Instruction:
    """One instruction as printed: `operands` and `calls` are names (of instructions of the same
    computation, of computations); `attributes` every `key=value` in printed order, raw text
    (metadata apart); `line` its line in the dump; `source` the Python line behind it
    (`file:line`, empty when the dump records none), with the op's `op_type` and `op_name`."""

    name: str
    computation: str
    opcode: str
    shape: str
    operands: tuple[str, ...]
    attributes: tuple[tuple[str, str], ...]
    calls: tuple[str, ...]
    is_root: bool
    line: int
    source: str
    op_type: str
    op_name: str
    parameter_number: int  # -1 unless a parameter

    @property
    def id(self) -> str:
        """The node key in `Module.to_networkx()`: `computation/name`."""
        return node_id(self.computation, self.name)

    def attribute(self, key: str, default: str | None = None) -> str | None:
        """The raw text of attribute `key` (`dimensions`, `slice`, ...), or `default`."""
        for k, v in self.attributes:
            if k == key:
                return v
        return default


@dataclass(frozen=True, eq=False)
class Computation:
    """A computation of a module; `instructions` in printed order, `root` its result."""

    name: str
    is_entry: bool
    _ir: xir.Computation = field(repr=False)
    _module: xir.Module = field(repr=False)

    @cached_property
    def instructions(self) -> tuple[Instruction, ...]:
        # Shardy shardings as the module wrote them (the canonical package: not at start-up).
        from xlagraph.canonical.written import as_written

        m = self._module
        return tuple(_instruction(m, self.name, as_written(m, i)) for i in self._ir.instructions)

    @cached_property
    def by_name(self) -> dict[str, Instruction]:
        return {i.name: i for i in self.instructions}

    def instruction(self, name: str) -> Instruction:
        """The instruction called `name` (KeyError when there is none)."""
        return self.by_name[name]

    @property
    def root(self) -> Instruction:
        return self.by_name[self._ir.root.name]

    @property
    def parameters(self) -> tuple[Instruction, ...]:
        """Parameters by parameter number."""
        return tuple(self.by_name[p.name] for p in self._ir.parameters)

    def __len__(self) -> int:
        return len(self._ir.instructions)

    def to_networkx(self) -> nx.MultiDiGraph:
        """This computation alone: its instructions and operand edges (calls are the node
        attribute `calls`; `Module.to_networkx` links them)."""
        import networkx as nx

        g = nx.MultiDiGraph(name=self.name, computation=self.name, is_entry=self.is_entry)
        _add_computation(g, self)
        return g


@dataclass(frozen=True, eq=False)
class Module:
    """One graph: its computations (callees first, the entry last) and what identifies it.

    `label` says where it came from (`PATH`, `PATH#K`, a dump file); `format` which reader read it
    (`hlo` or `lazy-ir`); `graph_hash` is torch_xla's Graph Hash where the dump names one;
    `fingerprint` the canonical fingerprint (the same for graphs that differ only in numbering,
    order, metadata or the order of parameters and outputs: `xlagraph graphs` groups by it).
    """

    name: str
    label: str
    path: str
    format: str
    stage: str
    graph_hash: str
    computations: tuple[Computation, ...] = field(repr=False)
    ir: xir.Module = field(repr=False)

    @classmethod
    def from_ir(cls, module: xir.Module) -> Module:
        """Wrap a module of the reader's IR (`xlagraph.ir.Module`)."""
        comps = tuple(Computation(c.name, c is module.entry, c, module) for c in module.computations)
        info = module.info
        return cls(module.name, info.label or module.path, module.path, module.format, info.stage,
                   info.graph_hash, comps, module)  # fmt: skip

    @cached_property
    def _canonical(self) -> Any:
        from xlagraph.canonical import canonicalize

        with reading(self.label):
            return canonicalize(self.ir)

    @property
    def fingerprint(self) -> str:
        return self._canonical.fingerprint

    @property
    def entry(self) -> Computation:
        return self.by_name[self.ir.entry.name]

    @cached_property
    def by_name(self) -> dict[str, Computation]:
        return {c.name: c for c in self.computations}

    def computation(self, name: str) -> Computation:
        """The computation called `name` (KeyError when there is none)."""
        return self.by_name[name]

    @property
    def instruction_count(self) -> int:
        return self.ir.instruction_count

    def instructions(self) -> tuple[Instruction, ...]:
        """Every instruction of every computation, computation by computation."""
        return tuple(i for c in self.computations for i in c.instructions)

    def to_graphml(self) -> str:
        """The module as GraphML, for Gephi, yEd and other graph viewers (`xlagraph graphs
        SRC --graphml OUT`)."""
        return graphml_text(self.to_networkx())

    def to_networkx(self) -> nx.MultiDiGraph:
        """The module as a `networkx.MultiDiGraph`: one node per instruction (key `computation/name`,
        its fields as attributes), one edge per operand use (`kind="operand"`, `operand=i`, key
        `i`), one per call from the callee's root to the caller (`kind="call"`). Graph attributes:
        `name`, `label`, `format`, `fingerprint`, `graph_hash`, `entry`.
        """
        import networkx as nx

        g = nx.MultiDiGraph(name=self.name, label=self.label, format=self.format,
                            fingerprint=self.fingerprint, graph_hash=self.graph_hash,
                            entry=self.entry.name)  # fmt: skip
        for c in self.computations:
            _add_computation(g, c)
        for c in self.computations:
            for i in c.instructions:
                for k, callee in enumerate(i.calls):
                    root = self.computation(callee).root.id
                    g.add_edge(root, i.id, key=f"call{k}", kind="call", computation=callee)
        return g

    def __repr__(self) -> str:
        # As `xlagraph diff` prints each side: label, name, sizes, fingerprint, graph hash.
        parts = [
            self.label or "(text)",
            self.name,
            f"{_plural(self.instruction_count, 'instruction')}, "
            f"{_plural(len(self.computations), 'computation')}",
            f"fingerprint {self.fingerprint}",
        ]
        if self.graph_hash:
            parts.append(f"graph hash {self.graph_hash}")
        return "  ".join(parts)

    def _repr_html_(self) -> str:
        from xlagraph.render.notebook import module_html

        return module_html(self)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _instruction(module: xir.Module, computation: str, i: xir.Instruction) -> Instruction:
    md = i.metadata
    frames = module.frames_of(i)
    source = f"{frames[0].file}:{frames[0].line}" if frames and frames[0].line else ""
    return Instruction(
        i.name, computation, i.opcode, i.shape, i.operands, i.attributes, i.called, i.is_root, i.line,
        source, md.op_type if md else "", md.op_name if md else "", i.parameter_number,
    )  # fmt: skip


def _add_computation(g: nx.MultiDiGraph, c: Computation) -> None:
    for i in c.instructions:
        g.add_node(
            i.id,
            name=i.name,
            computation=c.name,
            entry=c.is_entry,
            opcode=i.opcode,
            shape=i.shape,
            attributes=dict(i.attributes),
            calls=i.calls,
            root=i.is_root,
            line=i.line,
            source=i.source,
            op_type=i.op_type,
            op_name=i.op_name,
            parameter_number=i.parameter_number,
        )
    for i in c.instructions:
        for k, operand in enumerate(i.operands):
            g.add_edge(node_id(c.name, operand), i.id, key=k, kind="operand", operand=k)


def load(path: str) -> Module:
    """Read the one graph `path` names: an HLO or lazy-IR text file, or `PATH#K` (0-based) of an
    `XLA_SAVE_TENSORS_FILE` dump or a `--xla_dump_to` folder (`xlagraph graphs PATH` lists them).

    Raises `xlagraph.InputError` naming the file (and line) for anything it cannot read.

    >>> m = load("fixtures/torch_xla/kept_alive/a.hlo")
    >>> m.name, m.format, len(m.computations), m.instruction_count
    ('SyncTensorsGraph.70', 'hlo', 2, 68)
    >>> m.entry.root.opcode, m.entry.parameters[0].shape
    ('tuple', 'f32[4,4]{1,0}')
    >>> load("fixtures/torch_xla/kept_alive/save_hlo.txt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    xlagraph.errors.InputError: fixtures/.../save_hlo.txt: holds 3 graphs: pick one with ...#K (0 to 2); ...
    """
    from xlagraph.parse.sources import load_module

    with reading(path):
        return Module.from_ir(load_module(path))


def load_all(path: str) -> tuple[Module, ...]:
    """Every graph of `path` in order: one for a text file, one per block of a save file, one per
    HLO file of a `--xla_dump_to` folder. Graphs with the same text are read once.

    >>> [m.label.rsplit("/", 1)[-1] for m in load_all("fixtures/torch_xla/kept_alive/save_hlo.txt")]
    ['save_hlo.txt#0', 'save_hlo.txt#1', 'save_hlo.txt#2']
    """
    from xlagraph.parse.sources import open_source, read

    with reading(path):
        source = open_source(path)
        read_once: dict[tuple[str, str], xir.Module] = {}
        modules = []
        for graph in source.graphs:
            key = (graph.format, graph.text)
            if key not in read_once:
                read_once[key] = read(graph)
            modules.append(Module.from_ir(replace(read_once[key], info=graph.info)))
        return tuple(modules)


# -- GraphML (Module.to_graphml; api/_graphml.py for a diff) ------------------------------------


def _scalars(g: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """A copy of `g` whose attributes GraphML can hold (str, int, float, bool), edges numbered."""
    import networkx as nx

    out = nx.MultiDiGraph(**{k: _scalar(v) for k, v in g.graph.items()})
    for n, attrs in g.nodes(data=True):
        out.add_node(n, **{k: _scalar(v) for k, v in attrs.items()})
    for k, (u, v, key, attrs) in enumerate(g.edges(keys=True, data=True)):
        out.add_edge(u, v, key=key, id=f"e{k}", **{a: _scalar(x) for a, x in attrs.items()})
    return out


def _scalar(value: Any) -> str | int | float | bool:
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, (tuple, list)):
        return ", ".join(map(str, value))
    return "" if value is None else str(value)


def graphml_text(g: nx.MultiDiGraph) -> str:
    """`g` as GraphML text: attributes made scalars, every edge an id of its own (viewers merge
    edges that share one)."""
    import networkx as nx

    return "\n".join(nx.generate_graphml(_scalars(g), edge_id_from_attribute="id")) + "\n"
