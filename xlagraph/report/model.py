"""What `xlagraph report` says about one process of a run: immutable data, no behaviour (its terms,
sync, step, variant, compile, warm-up: docs/report.md, "Terms")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.dynamo_join.retrace import GuardFailure
from xlagraph.diagnose.recompile import Attribution, Baseline, Recompile, TensorRef

__all__ = [
    "Attribution",
    "Baseline",
    "CheckResult",
    "CountedGraph",
    "DynamoEvent",
    "DynamoSection",
    "EagerOp",
    "EagerSection",
    "EagerStep",
    "GraphBreakEntry",
    "GuardFailure",
    "RankingEntry",
    "Recompile",
    "RunReport",
    "SteadyTurns",
    "TensorRef",
    "TimelineEntry",
    "Turn",
    "Variant",
    "to_fix_first",
]


@dataclass(frozen=True)
class Variant:
    """One distinct graph of the run."""

    letter: str
    graph_hash: str
    first_sync: int
    first_step: int
    executions: int
    compiled: bool
    call_site: str  # file:line of the innermost user frame of its first sync
    module: str  # where its HLO is (`PATH` or `PATH#K`), empty when not kept


@dataclass(frozen=True)
class TimelineEntry:
    """One sync: which variant ran, whether it compiled, and what triggered it.

    `trigger` is a short label: `sync`, `mark_step`, `torch_xla.compile`, `dynamo`, `.item()`,
    `.cpu()`, `.tolist()`, `.numpy()`, `print`, `implicit` (another implicit sync) or `unknown`.
    """

    sync: int
    step: int
    variant: str
    compiled: bool
    trigger: str
    call_site: str
    phase: str  # warm-up | steady
    compile_seconds: float = 0.0


def to_fix_first(recompiles: Iterable[Recompile], by_cost: bool = False) -> tuple[Recompile, ...]:
    """What the user must fix before what is expected: the recompiles with a cause to fix first
    (costliest first when `by_cost`, else in run order), then the expected ones in run order."""
    return tuple(
        sorted(
            recompiles,
            key=lambda r: (r.expected, 0.0 if r.expected or not by_cost else -r.compile_seconds, r.sync),
        )
    )


@dataclass(frozen=True)
class RankingEntry:
    """How many compiles (and compile seconds, where known) one call site or cause kind cost."""

    key: str
    compiles: int
    seconds: float
    variants: tuple[str, ...]
    expected: bool = False  # every recompile counted here is expected (warm-up): ranked last


@dataclass(frozen=True)
class DynamoEvent:
    """One torch.compile compile of a frame: `kind` first | recompile | cache_limit. `guards` are the
    failures that made it (newest cache entry first: the first is what changed since the last
    compile); `variants` the XLA graphs compiled for it; `seconds` dynamo's trace and the backend's
    compile, `xla_seconds` XLA's compile of those graphs."""

    compile_id: str
    kind: str
    function: str
    code: str
    call_site: str
    step: int | None
    sync: int | None
    summary: str
    guards: tuple[GuardFailure, ...] = ()
    breaks: tuple[str, ...] = ()
    seconds: float = 0.0
    backend_seconds: float = 0.0
    xla_seconds: float = 0.0
    variants: tuple[str, ...] = ()
    fix: str = ""
    expected: bool = False
    graph_ops: int | None = None
    failure: str = ""


@dataclass(frozen=True)
class GraphBreakEntry:
    """A graph break (one reason at one user line), how many compiles hit it, and how many XLA
    graphs a steady step runs (where the run has them)."""

    reason: str
    at: str
    compiles: int
    explanation: str = ""
    graphs_per_step: int | None = None
    fix: str = ""


@dataclass(frozen=True)
class DynamoSection:
    """torch.compile's half of a report (`report/dynamo.py`)."""

    source: str
    frames: int
    compiles: int
    events: tuple[DynamoEvent, ...]
    recompiles: tuple[DynamoEvent, ...]
    graph_breaks: tuple[GraphBreakEntry, ...]
    by_call_site: tuple[RankingEntry, ...]
    seconds: float
    notes: tuple[str, ...] = ()

    @property
    def unexpected(self) -> tuple[DynamoEvent, ...]:
        return tuple(e for e in self.recompiles if not e.expected)


@dataclass(frozen=True)
class EagerOp:
    """An op eager mode compiled after the first step (`report/eager.py`): torch's name, its
    shapes (`in, in -> out`), the line (the user's line that made a changed input, else the op's),
    and `was`: the input shapes it compiled for before ("" where the op is new)."""

    step: int
    op: str
    shapes: str
    at: str = ""
    was: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class EagerStep:
    """A step after the first in which eager mode compiled ops: those compiled again for new
    shapes and those new; `changes` the commonest dimension changes (`8 -> 11`), `at` the user's
    lines that made the changed inputs, `summary` all of it in a line."""

    step: int
    recompiled: tuple[EagerOp, ...]
    new: tuple[EagerOp, ...]
    changes: tuple[str, ...]
    at: tuple[str, ...]
    seconds: float
    summary: str


@dataclass(frozen=True)
class EagerSection:
    """Eager mode's op compiles (torch_xla's EagerOpCompileTime): how many, per step, and each later
    step's ops compiled again for new shapes or new (`report/eager.py`)."""

    compiles: int
    reported: int | None
    seconds: float
    first_step: int
    by_step: tuple[tuple[int, int], ...]
    steps: tuple[EagerStep, ...]
    fix: str
    unread: int = 0  # op compiles whose module was not kept

    @property
    def recompiled(self) -> tuple[EagerOp, ...]:
        return tuple(o for s in self.steps for o in s.recompiled)


@dataclass(frozen=True)
class Turn:
    """One graph of the steady state against the one that held its place (call site, trigger, rank
    among the step's syncs there) in the step before: the kinds of the causes of their diff and the
    user's lines they cite (`note`: why none)."""

    variant: str
    against: str
    kinds: tuple[str, ...]
    lines: tuple[str, ...]
    note: str = ""
    fixes: tuple[str, ...] = ()  # the causes' fix IDs: a kind's specific reading (collective.order)
    expected: bool = False  # every cause is expected (another mode's graph, an evaluation pass)


@dataclass(frozen=True)
class SteadyTurns:
    """Why the steady state's graphs take turns (B, C, B, C ...; a cycle of k): each against the
    one before it (`turns`), and in a phrase (`the same updates in another order`) with the
    kinds of all their causes and the first user line they cite."""

    variants: tuple[str, ...]  # in the order they take turns
    phrase: str
    kinds: tuple[str, ...]
    line: str
    turns: tuple[Turn, ...]

    @property
    def expected(self) -> bool:
        """Every turn is expected: graphs of work that runs at its own points (an evaluation pass
        each epoch, another mode), each compiled once and replayed; nothing to settle."""
        return bool(self.turns) and all(t.expected for t in self.turns)

    def taking_turns(self, steady: tuple[str, ...]) -> str:
        """`2 graphs take turns (B, C)`; where other steady graphs run at their place in every step
        (a torch.compile step's bridge sync or unchanged backward), those that take turns among
        them: `8 graphs, 4 of them take turns (B, F, D, G)`."""
        if set(self.variants) >= set(steady):
            return f"{len(steady)} graphs take turns ({', '.join(steady)})"
        return f"{len(steady)} graphs, {len(self.variants)} of them take turns ({', '.join(self.variants)})"


@dataclass(frozen=True)
class RunReport:
    """The report of one process. `compiles_reported` is torch_xla's own count when the source
    has it; `warnings` say when it disagrees with `compiles`, `notes` what the source lacks."""

    source: str
    kind: str
    process: str
    compiles: int
    compiles_reported: int | None
    syncs: int
    steps: int
    variants: tuple[Variant, ...]
    timeline: tuple[TimelineEntry, ...]
    steady_from_step: int | None  # None: no steady state observed
    steady_variants: tuple[str, ...]
    recompiles: tuple[Recompile, ...]
    by_call_site: tuple[RankingEntry, ...]
    by_cause: tuple[RankingEntry, ...]
    compile_seconds: float
    notes: tuple[str, ...]
    warnings: tuple[str, ...]
    first_compiles: tuple[Recompile, ...] = ()  # compiles of other programs, not recompiles
    # Source steps that were no training step: only syncs at another line than the loop's marker
    # (an evaluation pass synced in the loop). Not counted in `steps`; the timeline keeps them.
    side_steps: int = 0
    # What costs every step without recompiling (a step cut in two by a read mid-step): no
    # recompile, so `check` does not count it.
    findings: tuple[Cause, ...] = ()
    dynamo: DynamoSection | None = None  # torch.compile's record, where the source has it
    steady_each_step: bool = False  # every steady step runs all of steady_variants, in one order
    eager: EagerSection | None = None  # eager mode's op compiles, where the run had any
    steady_turns: SteadyTurns | None = None  # the steady graphs' differences, where they take turns


@dataclass(frozen=True)
class CountedGraph:
    """A graph `check` counted: compiled after the warm-up it was told to ignore."""

    variant: str
    sync: int
    step: int
    call_site: str
    kinds: tuple[str, ...]
    lines: tuple[str, ...]


@dataclass(frozen=True)
class CheckResult:
    """`check` on one process: pass when at most `max_graphs` graphs compiled after `after_step`."""

    process: str
    passed: bool
    max_graphs: int | None  # None: no graph budget (only torch.compile's gate)
    after_step: int | None
    counted: tuple[CountedGraph, ...]
    explanation: str
    steady_turns: SteadyTurns | None = None  # as the report has it, where `check` explained the run
