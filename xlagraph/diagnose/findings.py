"""Findings: what costs every step without a recompile, read from the timeline.

A value read in the middle of the step (`.item()`, `print(loss)`) makes torch_xla sync there: the
step runs as two graphs, each compiled once, so nothing recompiles and no diff names it, yet
every step pays one more execution and a wait for the device. Such a cut, at the same line on
every steady step, is a `graph_break` finding with that line. A finding is no recompile:
`xlagraph check` counts compiles and does not fail on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from xlagraph.diagnose.causes import HINTS, Cause, CauseKind
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS

__all__ = ["step_breaks"]

# Steps a cut must be seen in, at least, to be a habit of the loop rather than a one-off read.
_MIN_STEPS = 2


class TimedSync(Protocol):
    """What a finding reads of one sync of the run (the report's `TimelineEntry`)."""

    @property
    def step(self) -> int: ...
    @property
    def trigger(self) -> str: ...
    @property
    def call_site(self) -> str: ...
    @property
    def phase(self) -> str: ...  # warm-up | steady


def step_breaks(timeline: Sequence[TimedSync]) -> tuple[Cause, ...]:
    """One `graph_break` per line whose implicit sync cuts every steady step (every step after
    the first when the run has no steady state) before the step's last sync."""
    by_step: dict[int, list[TimedSync]] = {}
    for e in timeline:
        by_step.setdefault(e.step, []).append(e)
    steady = sorted({e.step for e in timeline if e.phase == "steady"})
    scored = steady or sorted(by_step)[1:]
    if len(scored) < _MIN_STEPS:
        return ()
    cuts: dict[tuple[str, str], set[int]] = {}
    for step in scored:
        entries = by_step[step]
        for e in entries[:-1]:  # a read after the step's last sync cuts nothing
            if e.trigger in IMPLICIT_TRIGGERS and e.call_site:
                cuts.setdefault((e.trigger, e.call_site), set()).add(step)
    found = []
    for (trigger, site), steps in cuts.items():
        if steps != set(scored):
            continue
        summary = (
            f"a {trigger} sync inside the step cuts every step in two: {len(steps)} of {len(steps)} "
            f"{'steady ' if steady else ''}steps run one more graph execution and wait for the device "
            "there (each part compiles once, so no recompile shows it)"
        )
        found.append(Cause(CauseKind.GRAPH_BREAK, summary, HINTS[CauseKind.GRAPH_BREAK], sources=(site,)))
    return tuple(found)
