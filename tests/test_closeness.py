"""`diagnose.closeness` picks a recompile's baseline from the candidates' diffs, on the real
capture of two running statistics updated in an order that flips every step
(fixtures/torch_xla/turns; `tests/test_turns_captures.py` holds the report's words for it)."""

from __future__ import annotations

from dataclasses import replace

from tests.conftest import FIXTURES
from xlagraph.diagnose.closeness import closest_of, measure
from xlagraph.diff import DiffResult
from xlagraph.report import load_runs
from xlagraph.report.baseline import RunFacts, diff_against
from xlagraph.report.modules import Modules
from xlagraph.report.triggers import trigger_of
from xlagraph.runlog import Sync


def test_a_warm_up_alone_loses_to_the_same_graph_reordered() -> None:
    """C against A differs only by the state A computed from constants, fewer instructions than
    C against B, which is C reordered: B is the baseline all the same; without B, A is."""
    (log,) = load_runs(str(FIXTURES / "torch_xla" / "turns" / "running_stats_turns_capture"))
    first: dict[str, Sync] = {}
    for s in log.syncs:
        first.setdefault(s.graph_hash, s)
    a, b, c = first.values()
    triggers = {s.index: trigger_of(s) for s in log.syncs}
    modules = Modules(log.graphs)
    counted = []
    for base in (b, a):  # most recent first, as the report lists candidates
        earlier = [(h, s) for h, s in first.items() if s is not c]
        result = diff_against(c, base, modules, RunFacts(triggers, a.index), earlier)
        assert isinstance(result, DiffResult)
        counted.append(measure(base.graph_hash, base, result.differences))
    by_b, by_a = counted
    assert by_b.reorder and not by_b.warm_up and by_a.warm_up and not by_a.reorder
    assert by_a.involved < by_b.involved
    assert closest_of(counted) == 0
    assert closest_of([by_a, by_b]) == 1
    # a warm-up against other changes (no candidate is this graph reordered) is left to size
    assert closest_of([replace(by_b, reorder=False), by_a]) == 1
