"""The recorder's mutable state: one entry per distinct graph, and everything else that changes
while the run goes on. Plain mutable dataclasses, owned by one Recorder and changed under its lock.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from xlagraph.ir import Frame
from xlagraph.parse.pt_xla_debug import Analysis

__all__ = ["GraphEntry", "RunState"]


@dataclass
class GraphEntry:
    """A graph as the journal knows it: its record, and what is stored for it."""

    id: int
    record: dict[str, Any]
    has_module: bool = False
    has_tensors: bool = False
    written: bool = False  # its full record is in the journal; later changes are update records
    changes: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunState:
    """Everything that changes while the run goes on."""

    step: int = 0
    markers: int = 0
    user_markers: int = 0  # markers not run by torch_xla's dynamo bridge: the user syncs
    empty_markers: int = 0
    # the last step record is one the reader joins to the user's next step (the dynamo bridge's
    # sync, a compiled function's call): the user's next sync closes that step, run or not
    joined_open: bool = False
    compiles: int = 0
    executes: int = 0
    compile_sample_ts: float = 0.0
    # eager mode's op compiles (_eager): the metric's count and last sample read, the fingerprint
    # graph's op compiles (not the user's), and whether an unpaired dump was noted
    eager_count: int = 0
    eager_sample_ts: float = 0.0
    eager_skipped: int = 0
    eager_unnamed: bool = False
    carry: str = ""
    pending: Analysis | None = None
    frames: dict[tuple[tuple[Frame, ...], bool], int] = field(default_factory=dict)
    shardings: dict[tuple[Any, ...], int] = field(default_factory=dict)
    lines_on: bool = True  # torch_xla's IR debug (source lines) as capture left it
    lines_off_count: int = 0  # how often auto mode turned source lines off
    # graphs compiled while source lines were off, waiting for a rerun: hash -> marker the wait began
    awaiting: dict[str, int] = field(default_factory=dict)
    tracked: list[weakref.ref[Any]] = field(default_factory=list)  # tensors whose pending graph predicts
    probe_seen: dict[bytes, str] = field(default_factory=dict)  # their graph hash -> sync graph it became
    probe: tuple[bytes, str | None] | None = None  # (that hash, HLO with lines or None: not lowered)
    line_probes: int = 0
    lowered: list[GraphEntry] = field(default_factory=list)  # graphs whose rerun was lowered with lines
    late_notes: int = 0
    causes: dict[str, int] = field(default_factory=dict)
    graphs: dict[str, GraphEntry] = field(default_factory=dict)
    changed: list[GraphEntry] = field(default_factory=list)  # graphs with records to write
    dumps_seen: set[str] = field(default_factory=set)
    dump_queue: list[str] = field(default_factory=list)
    prefixes_done: set[str] = field(default_factory=set)  # dump prefixes whose before file is paired
    spmd_prefixes: dict[str, GraphEntry] = field(default_factory=dict)  # ... of partitioned graphs
    after_waiting: list[str] = field(default_factory=list)  # after files seen before their twin
    compile_queue: list[tuple[str, int]] = field(default_factory=list)  # (graph hash, inputs)
    unpaired_dumps: int = 0  # compiles with no execution record of their own (op lowerings)
    stored_bytes: int = 0
    cap_noted: bool = False
    report_spent: float = 0.0
    report_cost: float = 0.0
    # whether a step looks new (_tensors_report): torch_xla's created and destroyed tensor counts at
    # the last marker, what they grew by between markers so far, and the reports that guess bought
    tensor_counts: tuple[int, ...] = (0, 0)
    signatures: set[tuple[int, ...]] = field(default_factory=set)
    wrong_guesses: int = 0
    last_compile_marker: int = -(1 << 30)
    compile_seconds: float = 0.0  # sum of the compile times seen, for their average
    compile_count: int = 0
    fallbacks: dict[str, int] = field(default_factory=dict)  # aten op -> times run on the CPU so far
    notes: list[str] = field(default_factory=list)
    # set by before_marker, used by after_marker
    pre_size: int = 0
    bridge_marker: bool = False  # the marker was the dynamo bridge's own sync
    report: str | None = None
    report_reason: str = ""
    looks_new: bool = False  # the coming step's tensor counts were not seen before
    guessed: bool = False  # its report (or holders) was taken for that reason alone
    holders: list[dict[str, Any]] | None = None  # what keeps each live tensor alive (_holders)
    holders_failed: bool = False
    holders_cost: float = 0.0  # the last walk's seconds, when taken without the report
    overhead: float = 0.0
    last_read: tuple[Any, Any] = (None, None)  # (what was read, what it parsed to)
    last_call_read: tuple[Any, Any] = (None, None)  # the same, at a compiled function's call
