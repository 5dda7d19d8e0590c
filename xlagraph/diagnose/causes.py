"""The cause vocabulary: what changed between two graphs, said in PyTorch/XLA terms."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import NamedTuple

from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.fixes import fix_id as _fix_id

__all__ = ["HINTS", "Cause", "CauseKind", "Change", "Moved"]


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

    @property
    def fix_id(self) -> str:
        """The registry's ID of `hint` (`xlagraph.diagnose.fixes`), `` for a text it lacks."""
        return _fix_id(self.hint)
