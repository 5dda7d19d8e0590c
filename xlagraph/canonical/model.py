"""Data types of the canonical form (see the package docstring for the rules)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass, field, fields
from functools import cached_property

from xlagraph.ir import Computation, Instruction, Module, strip_layout

__all__ = ["CanonicalComputation", "CanonicalModule", "ComparedShapes"]


@dataclass(frozen=True, eq=False)
class CanonicalComputation:
    """One computation after forwarding, dead-code removal and hashing.

    `order` holds the live instructions, operands before users; `operands` their operands after
    tuple forwarding; `outputs` the flattened result. `param_number` is the input's number: the
    dump's parameter number, or where a tuple parameter's elements are the inputs, one number per
    element (rust/src/canon/tuple_params.rs: the tuple index for PyTorch/XLA's one wrapped
    tuple); `param_rank` the canonical one (in the entry; a called computation keeps the dump's
    numbers, which its callers rely on).
    `keys` are the content hashes (opcode, shape, attributes, literal: everything but the
    operands) that `h0`/`h1` build on; `layouts` the live instructions whose layout is not XLA's
    default (rust/src/canon/shape_text.rs `layout_of`), kept out of `h0`/`h1` but in `hash`.
    `plumbing` are tuples and get-tuple-elements that forwarding made redundant; `dead` are
    instructions that never reach the result. `walk` is the post-order of a depth-first walk from
    the outputs in canonical order (every live instruction but unread parameters).
    """

    computation: Computation
    order: tuple[str, ...]
    operands: dict[str, tuple[str, ...]]
    outputs: tuple[str, ...]
    keys: dict[str, int]
    h0: dict[str, int]
    h1: dict[str, int]
    param_number: dict[str, int]
    param_rank: dict[str, int]
    plumbing: tuple[str, ...]
    dead: tuple[str, ...]
    hash: int
    layouts: dict[str, str] = field(default_factory=dict)
    walk: tuple[str, ...] = ()
    # The compiled core's handle on this computation (`_core.CanonHandle`, rust/src/canon/handle.rs)
    # when the compiled reader made it: the matcher and the correspondence build their inputs
    # from it instead of reading the dictionaries above back into the core.
    core: object | None = field(default=None, repr=False)

    def instruction(self, name: str) -> Instruction:
        return self.computation.by_name[name]

    def with_opcodes(self, opcodes: Set[str]) -> Iterator[Instruction]:
        """The computation's instructions of those opcodes, in printed order, picked by the
        core's handle: the others are never visited in Python (most computations have few)."""
        instructions = self.computation.instructions
        return map(instructions.__getitem__, self.core.with_opcodes(opcodes))  # type: ignore[attr-defined]

    @cached_property
    def compared_shapes(self) -> ComparedShapes:
        """Shapes as the diagnosis compares them (no layout, no spaces), by name, each made the
        first time it is asked: a report asks for the same inputs' and outputs' shapes in every
        diff a graph is in. Loops over every input read this table (`shapes[name]`) rather than
        call `diagnose.shapes.shape_of` per name (1.2M calls in the 20-variant report)."""
        return ComparedShapes(self.computation.by_name)

    def lone_h0(self, h0: int) -> str | None:
        """The one live instruction whose structural hash is `h0`, None where none or several:
        by the compiled core's index of this computation (rust/src/canon/handle.rs `lone_h0`),
        made once however many diffs ask."""
        return self.core.lone_h0(h0)  # type: ignore[attr-defined]

    @cached_property
    def returned(self) -> frozenset[str]:
        """`outputs` as a set."""
        return frozenset(self.outputs)

    @property
    def name(self) -> str:
        return self.computation.name


_FIELDS = tuple(f.name for f in fields(CanonicalComputation))


class ComparedShapes(dict[str, str]):
    """An instruction's shape without layout or spaces (`f32[4,8]{1,0}` -> `f32[4,8]`), by
    name, made on first look-up (`__missing__`); a hit is a plain dictionary look-up."""

    __slots__ = ("_by_name",)

    def __init__(self, by_name: Mapping[str, Instruction]) -> None:
        super().__init__()
        self._by_name = by_name

    def __missing__(self, name: str) -> str:
        shape = self[name] = strip_layout(self._by_name[name].shape).replace(" ", "")
        return shape


def assembled(values: tuple) -> CanonicalComputation:
    """`CanonicalComputation(*values)`, every field given, without the frozen dataclass's
    `__init__` (one `object.__setattr__` per field): the compiled reader hands over one per
    computation, and a dump of 2,700 reducer computations made that a few milliseconds a side."""
    made = object.__new__(CanonicalComputation)
    made.__dict__.update(zip(_FIELDS, values, strict=True))
    return made


@dataclass(frozen=True, eq=False)
class CanonicalModule:
    """Every computation in canonical form.

    `fingerprint` is the module's canonical identity, blind to the order of parameters and
    outputs; `order` adds that order back (outputs in dump order, parameters by number), so two
    graphs with one fingerprint and two orders are the same computation compiled twice.
    """

    module: Module
    computations: dict[str, CanonicalComputation]
    fingerprint: str
    order: str = ""

    @property
    def entry(self) -> CanonicalComputation:
        return self.computations[self.module.entry.name]
