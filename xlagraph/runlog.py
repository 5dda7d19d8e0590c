"""What a run looked like: every graph execution in order, and the graphs behind them.

One `RunLog` per process. It is built from a capture folder (`xlagraph.capture.read_capture`)
or from a plain `XLA_SAVE_TENSORS_FILE` dump (`xlagraph.report.runlog_from_save_file`), and
the report is computed from it alone, so both sources get the same report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xlagraph.dynamolog import DynamoLog
from xlagraph.ir import Frame

__all__ = ["EagerCompile", "GraphRecord", "Holder", "LiveTensor", "RunLog", "Step", "Sync"]


@dataclass(frozen=True)
class Holder:
    """What kept a live tensor alive at the sync, in the user's names (`capture/_holders.py`):
    `path` from a variable of `function` (`self.metrics['logits']`), `name` the variable or
    attribute that stores it (`metrics`), `kind` where that name lives (`local`, `global`,
    `attribute`; `owner_file` is then the file of its class), `file:line` the frame it was
    reached from."""

    path: str
    name: str
    kind: str
    function: str
    file: str
    line: int
    owner_file: str = ""

    def __str__(self) -> str:
        return f"{self.path} (in {self.function})"


@dataclass(frozen=True)
class LiveTensor:
    """One entry of torch_xla's live-tensor report (`_xla_tensors_report`), taken before a sync."""

    id: int
    shape: str
    device: str
    ir_nodes: int
    frames: tuple[Frame, ...] = ()  # innermost first; only with XLA_IR_DEBUG=1
    holders: tuple[Holder, ...] = ()  # where the program kept it, shortest path first (captures)
    pending: bool | None = None  # not computed yet at the sync: an output of its graph (None: unknown)


@dataclass(frozen=True)
class Sync:
    """One graph execution: an explicit sync (`torch_xla.sync`, `mark_step`, `torch_xla.compile`)
    or an implicit one (`.item()`, `.cpu()`, `print`).

    `cause` is torch_xla's own wording where known (`user torch_xla.sync`, `most likely user code
    trying to access tensor value before torch_xla.sync`, ...). `frames` are the Python frames
    that triggered it, innermost first. `compiled` is True when this execution compiled a new
    graph (a cache miss); `compile_seconds` is its compile time where known.
    """

    index: int
    step: int
    graph_hash: str
    compiled: bool
    cause: str = ""
    frames: tuple[Frame, ...] = ()
    compile_seconds: float = 0.0


@dataclass(frozen=True)
class Step:
    """One step marker (`torch_xla.sync()` / `xm.mark_step()`): wall-clock start and end (seconds
    since the run started) and how many compiles and executions torch_xla counted in it."""

    index: int
    start: float
    end: float
    compiles: int = 0
    executions: int = 0


@dataclass(frozen=True)
class EagerCompile:
    """One op torch_xla compiled in eager mode (`EagerOpCompileTime`): the step it ran in, its
    module (a spec `load_module` reads; empty when not kept) and its compile seconds."""

    step: int
    module: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class GraphRecord:
    """A distinct graph: where its HLO is (`module`: a spec `load_module` reads, `PATH` or
    `PATH#K`, empty when not kept) and the live tensors seen before the sync that compiled it."""

    graph_hash: str
    module: str = ""
    tensors: tuple[LiveTensor, ...] = ()
    tensors_note: str = ""  # why there is no tensor report, when there is none


@dataclass(frozen=True)
class RunLog:
    """Everything one process of one run recorded. `compiles_reported` is torch_xla's own count
    of compiles (the `CompileTime` metric) where the source has it."""

    source: str
    kind: str  # capture | save-file
    process: str = ""
    syncs: tuple[Sync, ...] = ()
    graphs: dict[str, GraphRecord] = field(default_factory=dict)
    steps: tuple[Step, ...] = ()
    compiles_reported: int | None = None
    notes: tuple[str, ...] = ()
    # torch.compile's record (a capture's torch_trace.log, a TORCH_TRACE file): each compile's
    # `step` is a step of this log and `sync` the first sync of that step after it began
    dynamo: DynamoLog | None = None
    # eager mode's op compiles, and torch_xla's own count of them where the source has it
    eager: tuple[EagerCompile, ...] = ()
    eager_compiles_reported: int | None = None
