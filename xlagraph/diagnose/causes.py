"""The cause vocabulary: what changed between two graphs, said in PyTorch/XLA terms."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from types import MappingProxyType
from typing import NamedTuple

from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.fixes import fix_id as _fix_id

__all__ = [
    "HINTS",
    "INPUT_LAYOUT",
    "INTERFACE",
    "Cause",
    "CauseKind",
    "Change",
    "Moved",
    "name_sides",
    "with_sides",
]


class CauseKind(str, Enum):
    PARAMETER_PERMUTATION = "parameter_permutation"
    OUTPUT_PERMUTATION = "output_permutation"
    PARAMETER_SHAPE = "parameter_shape"
    OUTPUT_ADDED = "output_added"
    OUTPUT_REMOVED = "output_removed"
    CONSTANT_VALUE = "constant_value"
    ATTRIBUTE = "attribute"
    COLLECTIVE = "collective"
    STRUCTURE = "structure"
    DEAD_CODE = "dead_code"
    GRAPH_BREAK = "graph_break"
    DYNAMIC_SHAPE = "dynamic_shape"
    CONDITIONAL_WORK = "conditional_work"
    STATE_INIT = "state_init"
    DTYPE = "dtype"
    LAYOUT = "layout"
    SHARDING = "sharding"
    PARAMETER_ADDED = "parameter_added"
    PARAMETER_REMOVED = "parameter_removed"

    def __str__(self) -> str:
        return self.value


# The causes that change which tensors a graph takes or returns (its interface).
INTERFACE = frozenset(
    {CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED, CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED}
)

# The `Cause.case` of entry inputs handed in another layout (`inputs`, an output's layout cause is
# not one): `recognizers.layout` reads it. Here, as both import this module and not each other.
INPUT_LAYOUT = "layout.input"

# The fix a cause of each kind gets unless its recognizer words a better one.
HINTS: Mapping[CauseKind, str] = MappingProxyType({kind: fix(kind.value) for kind in CauseKind})


class Change(NamedTuple):
    """One instruction that differs: `what` is `shape`, `value`, an attribute name, `opcode` …"""

    left: str
    right: str
    what: str
    old: str
    new: str


# `Change.what` of an output folded into a type change that is no view's base: the twin of one
# the other graph returns, the same tensor computed another way in the other precision.
TWIN_OUTPUT = "output twin"


class Moved(NamedTuple):
    """A permutation entry: A's parameter/output `left` is B's `right` (`what`: "input" or
    "output"; one cause may carry both when one reason reordered both)."""

    left: int
    right: int
    shape: str
    left_name: str
    right_name: str
    what: str = ""


@dataclass(frozen=True)
class Cause:
    """One reason two graphs differ.

    `left`/`right` name the instructions involved on each side (as printed in the dumps),
    `changes` the instructions that differ with old/new values, `mapping` the permutation for
    `*_permutation`, `sources` the user's lines (`file:line`) the dumps' metadata points to.
    `computation` is the left-hand computation it was found in. `info` marks an expected change
    (optimizer-state warm-up): the graphs still differ, but nothing needs fixing. `count` is how
    many raw differences the cause groups; `library` the library frames beside the user's lines.
    `case` names which case of its rule made it, for a later rule to read (never shown: a
    renderer may reword the summary).
    """

    kind: CauseKind
    summary: str
    hint: str
    left: tuple[str, ...] = ()
    right: tuple[str, ...] = ()
    changes: tuple[Change, ...] = ()
    mapping: tuple[Moved, ...] = ()
    sources: tuple[str, ...] = ()
    computation: str = ""
    info: bool = False
    count: int = 1
    library: tuple[str, ...] = ()
    case: str = ""

    @property
    def fix_id(self) -> str:
        """The registry's ID of `hint` (`xlagraph.diagnose.fixes`), `` for a text it lacks."""
        return _fix_id(self.hint)

    def attribute_only(self, *whats: str) -> bool:
        """An `attribute` cause with changes, each of one of `whats` (`shape`, a directive, the
        donated buffers): what a rule that owns one kind of attribute change takes."""
        return (
            self.kind is CauseKind.ATTRIBUTE
            and bool(self.changes)
            and all(ch.what in whats for ch in self.changes)
        )


# The engine names the two graphs of a diff "A" and "B" (the first and the second file of
# `xlagraph diff`). A report letters every graph of a run, so a recompile of E against C must
# say "E" and "C" where the engine said "B" and "A": never the report's other graphs A and B.
# Text in backticks quotes the user's code (a batch size `B`), and a letter inside a path or a
# word is no side name.
_SIDE = re.compile(r"(?<![\w/.\-])([AB])(?![\w/.\-])")


def name_sides(text: str, a: str, b: str) -> str:
    """`text` with the sides "A" and "B" renamed `a` and `b` at once (so they may swap)."""
    if (a, b) == ("A", "B"):
        return text
    names = {"A": a, "B": b}
    parts = text.split("`")
    parts[::2] = [_SIDE.sub(lambda m: names[m.group(1)], p) for p in parts[::2]]
    return "`".join(parts)


def with_sides(cause: Cause, a: str, b: str) -> Cause:
    """`cause` as a report shows it for graphs lettered `a` (the diff's A) and `b` (its B); its
    fix text is the registry's and names no side."""
    return replace(cause, summary=name_sides(cause.summary, a, b))
