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


HINTS: dict[CauseKind, str] = {
    CauseKind.PARAMETER_PERMUTATION: (
        "keep the order in which tensors are created or updated fixed across steps: flush deferred "
        "collectives (FSDP reduce-scatter buckets) in a fixed order, iterate over sorted keys, not sets"
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
        "xlagraph does not know this pattern: compare the two graphs' op types at the cited line, "
        "and make that code run the same way on every step"
    ),
    CauseKind.GRAPH_BREAK: (
        "a sync inside the step (.item(), .cpu(), print(tensor), Python control flow on a tensor) cut "
        "the graph: move it after the step's sync, read values in xm.add_step_closure, or keep the "
        "decision on the device (torch.where)"
    ),
    CauseKind.DYNAMIC_SHAPE: (
        "a shape comes from data values (boolean mask, nonzero, unique, masked_select): keep shapes "
        "static, e.g. torch.where(mask, x, 0) and a masked sum/mean instead of x[mask], and counts per "
        "class with one_hot(x, n).sum(0) or bincount(x, minlength=n) instead of unique"
    ),
    CauseKind.CONDITIONAL_WORK: (
        "work runs only on some steps (if step % k == 0: clipping, logging, metrics): run it on every "
        "step (cheap, no recompile), or accept exactly one extra graph and keep k fixed"
    ),
    CauseKind.STATE_INIT: (
        "expected warm-up: state created on the first steps (optimizer buffers) changes the graph once; "
        "nothing to do unless it keeps changing"
    ),
    CauseKind.DTYPE: (
        "an element type changed: keep autocast / .to(dtype) / model.half() the same on every step, "
        "and create tensors with an explicit dtype"
    ),
    CauseKind.LAYOUT: (
        "the same shapes in another layout or memory space compile as another program: keep the "
        "tensors' layout fixed (no .contiguous()/.t() toggling, same placement) across steps"
    ),
    CauseKind.SHARDING: (
        "a sharding changed: call xs.mark_sharding with the same mesh and partition spec on every "
        "step, and shard the inputs once before the loop"
    ),
    CauseKind.PARAMETER_ADDED: (
        "the graph takes a new input on this step: a tensor (state, a Python value passed as data) "
        "exists only from this step on; create it before the loop"
    ),
    CauseKind.PARAMETER_REMOVED: (
        "the graph no longer takes an input it took before: a tensor was dropped or became a baked "
        "constant; keep what the step reads the same on every step"
    ),
    CauseKind.DEAD_CODE: (
        "compute only what you use (e.g. torch.mean instead of torch.std_mean(...)[1]), or compute "
        "the unused part the same way on every step"
    ),
}


class Change(NamedTuple):
    """One instruction that differs: `what` is `shape`, `value`, an attribute name, `opcode` …"""

    left: str
    right: str
    what: str
    old: str
    new: str


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
