"""The intermediate representation every reader produces and every later stage consumes.

All types are immutable. `Instruction` is a NamedTuple rather than a frozen dataclass because
a 600K-instruction module creates 600K of them and tuple construction is the cheapest
immutable object Python has; the others are frozen dataclasses.

Names are kept exactly as printed, minus the `%` sigil, so messages can quote the dump.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from operator import attrgetter
from typing import NamedTuple

from xlagraph.source_paths import portable_frames, portable_path

__all__ = [
    "Computation",
    "Frame",
    "GraphInfo",
    "Instruction",
    "Metadata",
    "Module",
    "Written",
    "callers",
    "has_source_lines",
    "name_at",
    "strip_layout",
]

_LAYOUT = re.compile(r"\{[^{}]*\}")
_COMMENT = re.compile(r"/\*.*?\*/")


@lru_cache(maxsize=65536)
def strip_layout(shape: str) -> str:
    """`f32[4,8]{1,0}` -> `f32[4,8]`; tuple shapes keep their structure, index comments go."""
    if "{" in shape:
        shape = _LAYOUT.sub("", shape)
    if "/*" in shape:
        shape = _COMMENT.sub("", shape)
    return shape


class Frame(NamedTuple):
    """One Python stack frame: `fn (file:line)`."""

    function: str
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.function} ({self.file}:{self.line})"


class Metadata(NamedTuple):
    """The fields of `metadata={...}` that xlagraph uses."""

    op_type: str = ""
    op_name: str = ""
    source_file: str = ""
    source_line: int = 0
    stack_frame_id: int = 0

    @property
    def location(self) -> str:
        if not self.source_file:
            return ""
        file = portable_path(self.source_file)
        return f"{file}:{self.source_line}" if self.source_line else file


class Instruction(NamedTuple):
    """One HLO (or lazy-IR) instruction.

    `operands` and `called` are names; `attributes` keeps every `key=value` in printed order with
    the raw value text (metadata excluded, see `metadata`). `payload` is the text inside the
    parentheses of `parameter(N)` and `constant(...)`, which are not operand lists.
    """

    name: str
    opcode: str
    shape: str
    operands: tuple[str, ...]
    attributes: tuple[tuple[str, str], ...]
    called: tuple[str, ...]
    payload: str
    metadata: Metadata | None
    is_root: bool
    line: int

    def attribute(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.attributes:
            if k == key:
                return v
        return default

    @property
    def parameter_number(self) -> int:
        return int(self.payload) if self.opcode == "parameter" else -1

    @property
    def location(self) -> str:
        """`file:line` of its metadata; "" without."""
        return self.metadata.location if self.metadata else ""


@dataclass(frozen=True, eq=False)
class Computation:
    """A named list of instructions in printed order; `root` is the ROOT (or the last one).

    `instructions` is a tuple, or where the compiled reader was asked for it (`LAZY_IR`), a
    sequence that builds each `Instruction` when first asked for and otherwise answers as that
    tuple would (`_core.Instructions`)."""

    name: str
    instructions: Sequence[Instruction]
    is_entry: bool = False
    line: int = 0

    @cached_property
    def by_name(self) -> dict[str, Instruction]:
        return {i.name: i for i in self.instructions}

    @cached_property
    def root(self) -> Instruction:
        for i in reversed(self.instructions):
            if i.is_root:
                return i
        return self.instructions[-1]

    @cached_property
    def parameters(self) -> tuple[Instruction, ...]:
        """Parameters ordered by parameter number, not by printed position."""
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return tuple(sorted(params, key=lambda i: i.parameter_number))


def callers(comp: Computation) -> Iterable[str]:
    """The names of the instructions that call computations, in order (a lazy sequence answers
    from the reader's records, building no instruction)."""
    fast = getattr(comp.instructions, "callers", None)
    return fast() if fast is not None else (i.name for i in comp.instructions if i.called)


def has_source_lines(comp: Computation) -> bool:
    """Any instruction's metadata names a source file or a stack frame."""
    fast = getattr(comp.instructions, "any_source_line", None)
    if fast is not None:
        return fast()
    # Instructions without metadata are dropped at C speed: in a dump with none, that is all.
    with_metadata = filter(None, map(_METADATA, comp.instructions))
    return any(md.source_file or md.stack_frame_id for md in with_metadata)


def name_at(instructions: Sequence[Instruction]) -> Callable[[int], str]:
    """`k -> instructions[k].name`, without building the instruction where the sequence is lazy."""
    fast = getattr(instructions, "name_at", None)
    return fast if fast is not None else (lambda k: instructions[k].name)


_METADATA = attrgetter("metadata")


@dataclass(frozen=True)
class GraphInfo:
    """What a multi-graph dump says about one graph besides its HLO."""

    index: int = 0
    graph_hash: str = ""
    root_hashes: tuple[str, ...] = ()
    frames: tuple[Frame, ...] = ()
    stage: str = ""  # before_optimizations / after_optimizations for --xla_dump_to files
    label: str = ""  # where it came from: "file.hlo", "dump#3", "module_0003...txt"


@dataclass(frozen=True, eq=False)
class Written:
    """What the canonical form re-spelled of a module's Shardy shardings (rust/src/canon/shardy.rs,
    mesh and axis names as bound names), as the module wrote them: the comparison reads the
    canonical text, the views say it in the module's names (canonical/written.py). `values`:
    (line, canonical frontend dict) -> the dict as written; `meshes`: mesh name -> its definition
    as a sharding value would write it in place (`<[\\"a\\"=2, \\"b\\"=2]>`)."""

    values: dict[tuple[int, str], str] = field(default_factory=dict)
    meshes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Module:
    """One HLO module: computations in printed order (callees first), the entry last.

    `format` says which reader produced it: `hlo` or `lazy-ir`. `stack_frames` maps a
    `stack_frame_id` to its innermost-first list of frames (the 2025+ FileNames/StackFrames block).
    """

    name: str
    computations: tuple[Computation, ...]
    header: tuple[tuple[str, str], ...] = ()
    format: str = "hlo"
    path: str = ""
    info: GraphInfo = field(default_factory=GraphInfo)
    stack_frames: dict[int, tuple[Frame, ...]] = field(default_factory=dict)
    # `(computations, canonical form)` from the compiled reader, for `canonicalize`, which uses it
    # only while `computations` is still that tuple (see `_core.parse_hlo`).
    core: tuple | None = field(default=None, repr=False)
    # What the reader says about the text besides its content: old spellings it read (one line each).
    notes: tuple[str, ...] = ()
    # The same module with its `call`s inlined as XLA inlines them (rust/src/canon/inline.rs)
    # and, on one device, without Shardy's result-sharding custom-calls (canon/shardy.rs), where
    # it has any: the program `canonicalize` and every later stage see (issue 37).
    inlined: Module | None = field(default=None, repr=False)
    # Its Shardy shardings as written, where the canonical form re-spelled them (issue 37).
    written: Written = field(default_factory=Written, repr=False)

    @cached_property
    def entry(self) -> Computation:
        for c in self.computations:
            if c.is_entry:
                return c
        return self.computations[-1]

    @cached_property
    def by_name(self) -> dict[str, Computation]:
        return {c.name: c for c in self.computations}

    @property
    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations)

    def header_attribute(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.header:
            if k == key:
                return v
        return default

    def frames_of(self, instruction: Instruction) -> tuple[Frame, ...]:
        """The Python frames behind an instruction, innermost first, from whatever the dump has."""
        md = instruction.metadata
        if md is None:
            return ()
        if md.stack_frame_id and md.stack_frame_id in self.stack_frames:
            return portable_frames(self.stack_frames[md.stack_frame_id])
        if md.source_file:  # (a dump's path as recorded, maybe another machine's: its portable form)
            return (Frame("", portable_path(md.source_file), md.source_line),)
        return ()
