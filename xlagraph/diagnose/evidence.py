"""The one contract every recognizer follows, and what it may look at.

A recognizer reads the `Evidence` (both canonical modules, what a capture knows about the
step) and the raw differences still unexplained, and returns the causes it names plus the
indices of the raw differences it consumed. Recognizers run in the order of
`recognizers.ORDER`; each sees only what the earlier ones left.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.causes import Cause
from xlagraph.ir import Instruction
from xlagraph.runlog import LiveTensor

__all__ = ["IMPLICIT_TRIGGERS", "Context", "Evidence", "Recognized", "Recognizer"]

# Syncs the user did not ask for: a value read in the middle of the step.
IMPLICIT_TRIGGERS = frozenset({".item()", ".cpu()", ".tolist()", ".numpy()", "print", "implicit"})


@dataclass(frozen=True)
class Context:
    """What a capture (or a save file) knows about the two graphs besides their HLO.

    `trigger` / `baseline_trigger`: what made each graph's sync happen (`report.trigger_of`
    labels); `call_site` the user's line of the new graph's sync; `step` / `baseline_step` the
    training steps they first ran at (-1: unknown); `first_graph`: the baseline is the first
    graph of the run (so the new one is often the optimizer's warm-up); `first_at_site`: the
    baseline is the first graph compiled at its call site, which may come late in a run (a new
    optimizer or model trained after another in one process: its warm-up starts there).
    `bridge_synced`: torch.compile's openxla bridge synced all pending work earlier in the new
    graph's step (its first compile of a graph does): the user's ops up to then ran in the
    bridge's graph, not in this one; `baseline_bridged`: so it did in the baseline's step and in
    every step between the two (the new graph is the first at its site after the bridge's warm-up).
    `host_reads`: the user's lines where a graph of the run up to the new one was cut by an
    implicit sync (a tensor's value read on the host, `if h.max() > limit:` without `.item()`).
    `cut_before`: the user's line of an implicit sync earlier in the new graph's step: the step's
    ops up to it ran in that sync's graph, and this one holds the rest; `baseline_cut_before`: so
    in the baseline's step. `step_cuts` / `baseline_step_cuts`: the user's lines of every implicit
    sync seen earlier in each graph's step (the first cut, then those of graphs compiled there).
    `tensors`: the live tensors the capture saw before the new graph's sync (with their frames
    where it ran with XLA_IR_DEBUG=1): where at runtime the user's code made them;
    `baseline_tensors` those before the baseline graph's sync, where the diff has them (a rank
    diff: each rank ran its own graph, and the one that ran the collectives may be either).
    """

    trigger: str = ""
    baseline_trigger: str = ""
    call_site: str = ""
    baseline_call_site: str = ""
    step: int = -1
    baseline_step: int = -1
    first_graph: bool = False
    first_at_site: bool = False
    bridge_synced: bool = False
    baseline_bridged: bool = False
    host_reads: tuple[str, ...] = ()
    cut_before: str = ""
    baseline_cut_before: str = ""
    step_cuts: tuple[str, ...] = ()
    baseline_step_cuts: tuple[str, ...] = ()
    tensors: tuple[LiveTensor, ...] = ()
    baseline_tensors: tuple[LiveTensor, ...] = ()

    @property
    def known(self) -> bool:
        return bool(self.trigger or self.call_site or self.step >= 0)


NO_CONTEXT = Context()


@dataclass(frozen=True)
class Evidence:
    """`entry_match`: B's entry instruction -> the A instruction the matcher paired it with (empty
    when not known), for recognizers that need what an instruction was in the other graph."""

    left: CanonicalModule
    right: CanonicalModule
    context: Context
    entry_match: Mapping[str, str] = field(default_factory=dict)
    # The same pairs from A's side, where the caller has them (`Matching.left`); else inverted.
    entry_left: Mapping[str, str] | None = None
    # A's entry instruction -> the matcher's phase that paired it (`Matching.matcher`).
    entry_phase: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def entry_match_left(self) -> Mapping[str, str]:
        """`entry_match` inverted (A's instruction -> B's): the matching pairs each instruction
        with at most one (`Mappings.add`, the core's `M::add`), so its left map is exactly this.
        For the recognizers that ask which of A's instructions are paired."""
        if self.entry_left is not None:
            return self.entry_left
        return {a: b for b, a in self.entry_match.items()}

    def instructions(self, cause: Cause) -> list[tuple[CanonicalModule, Instruction]]:
        """Every instruction a cause names, with its module (A's first)."""
        out: list[tuple[CanonicalModule, Instruction]] = []
        for canon, names in ((self.left, cause.left), (self.right, cause.right)):
            comps = [canon.computations[cause.computation]] if cause.computation in canon.computations else []
            comps += [canon.entry, *list(canon.computations.values())]
            for name in names:
                ins = next(
                    (c.computation.by_name[name] for c in comps if name in c.computation.by_name), None
                )
                if ins is not None:
                    out.append((canon, ins))
        return out

    def library_files(self, cause: Cause) -> list[str]:
        """The files the named instructions' metadata points to (innermost frame), in order."""
        files: dict[str, None] = {}
        for canon, ins in self.instructions(cause):
            for frame in canon.module.frames_of(ins)[:1]:
                files.setdefault(frame.file.replace("\\", "/"))
        return list(files)


class Recognized(NamedTuple):
    """What one recognizer found: new causes, the raw differences (indices) they explain, and
    `rest`: raw differences it split off a consumed one and leaves to the recognizers after it
    (the learning rate among the inputs a warm-up step adds)."""

    causes: tuple[Cause, ...] = ()
    consumed: frozenset[int] = frozenset()
    rest: tuple[Cause, ...] = ()


NOTHING = Recognized()


@dataclass(frozen=True)
class Recognizer:
    """One real-world pattern: `recognize(evidence, pending)` -> `Recognized`."""

    name: str
    recognize: Callable[[Evidence, tuple[Cause, ...]], Recognized]
