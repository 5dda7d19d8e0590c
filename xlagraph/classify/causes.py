"""The cause vocabulary: what changed between two graphs, said in PyTorch/XLA terms."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

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

    def __str__(self) -> str:
        return self.value


HINTS: dict[CauseKind, str] = {
    CauseKind.PARAMETER_PERMUTATION: (
        "keep the order in which tensors are created or updated fixed across steps: flush deferred "
        "callbacks (e.g. FSDP reduce-scatter buckets) in a fixed order, iterate over sorted keys, not sets"
    ),
    CauseKind.OUTPUT_PERMUTATION: (
        "keep the order in which live tensors are produced fixed across steps: fill dicts of "
        "statistics in a fixed key order, update parameters in a fixed order"
    ),
    CauseKind.PARAMETER_SHAPE: (
        "keep input shapes fixed: pad the last batch or use drop_last=True, bucket or pad variable "
        "sequence lengths to a few fixed sizes"
    ),
    CauseKind.OUTPUT_ADDED: (
        "a tensor is kept alive (or materialized) only on some steps: compute it on every step, or "
        "read it after the sync inside xm.add_step_closure, and drop references to it afterwards"
    ),
    CauseKind.OUTPUT_REMOVED: (
        "a tensor that was kept alive before is not any more: compute it on every step, or read it "
        "after the sync inside xm.add_step_closure"
    ),
    CauseKind.CONSTANT_VALUE: (
        "a Python scalar is baked into the graph as a constant (PyTorch/XLA bakes 0 and 1, and "
        "values it cannot pass as parameters): keep it fixed, or make it a device tensor "
        "(torch.tensor(x, device=...)) that you update in place"
    ),
    CauseKind.ATTRIBUTE: (
        "a Python int reached an op parameter (slice bounds, dimensions, sizes): keep it fixed, or "
        "index with a device tensor (index_select / gather) so the graph does not depend on it"
    ),
    CauseKind.COLLECTIVE: (
        "collectives were grouped differently: keep the bucketing fixed across steps "
        "(reduce_scatter_bucket_size_mb, coalescing) and make every bucket flush in the same step"
    ),
    CauseKind.STRUCTURE: (
        "the computation itself differs: look for data-dependent Python control flow, an .item() or "
        "print() that splits the step, or code that runs only on some steps"
    ),
    CauseKind.DEAD_CODE: "nothing to do: instructions that never reach a result do not change the graph",
}


class Change(NamedTuple):
    """One instruction that differs: `what` is `shape`, `value`, an attribute name, `opcode` …"""

    left: str
    right: str
    what: str
    old: str
    new: str


class Moved(NamedTuple):
    """A permutation entry: A's parameter/output `left` is B's `right`."""

    left: int
    right: int
    shape: str
    left_name: str
    right_name: str


@dataclass(frozen=True)
class Cause:
    """One reason two graphs differ.

    `left`/`right` name the instructions involved on each side (as printed in the dumps),
    `changes` the instructions that differ with old/new values, `mapping` the permutation for
    `*_permutation`, `sources` the user's lines (`file:line`) the dumps' metadata points to.
    `computation` is the left-hand computation it was found in. `info` causes (dead code) do not
    make graphs different.
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
