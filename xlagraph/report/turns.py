"""The steady state's turns: graphs that run by turns after the warm-up (B, C, B, C ...; a cycle of
k), each explained against the one that held its place in the step before: the same call site,
trigger and rank among the step's syncs there (issue 37).

A recompile is explained against its baseline, which for a graph of the cycle need not be the
graph before it in the cycle (the first one it took turns with compiled before the state existed);
what makes the loop unstable is what differs between consecutive graphs of the steady state. That
diff is the recompile's own where its baseline is the graph before it, else one more diff.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from xlagraph.diagnose.attribution import AttributionContext, attribute
from xlagraph.diagnose.bridge import bridge_synced
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.second_call import SECOND_CALL
from xlagraph.diagnose.frames import call_site
from xlagraph.report.baseline import RunFacts, diff_against, implicit_cuts
from xlagraph.report.explain import ReportRun
from xlagraph.report.model import Recompile, SteadyTurns, TimelineEntry, Turn
from xlagraph.runlog import Sync

__all__ = ["diff_turn", "steady_turns", "turn_pairs"]

_MAX_TURNS = 6  # a steady state of more graphs than that is no cycle to explain pair by pair

_PERMUTATIONS = frozenset({str(CauseKind.PARAMETER_PERMUTATION), str(CauseKind.OUTPUT_PERMUTATION)})
# What the graphs taking turns differ in, in the user's words, by the first kind that says it.
_PHRASES = {
    str(CauseKind.PARAMETER_SHAPE): "inputs of other shapes",
    str(CauseKind.DYNAMIC_SHAPE): "other sizes",
    str(CauseKind.CONSTANT_VALUE): "other constant values",
    str(CauseKind.ATTRIBUTE): "other attributes (slice bounds, sizes)",
    str(CauseKind.OUTPUT_ADDED): "other tensors kept alive",
    str(CauseKind.OUTPUT_REMOVED): "other tensors kept alive",
    str(CauseKind.PARAMETER_ADDED): "other inputs",
    str(CauseKind.PARAMETER_REMOVED): "other inputs",
    str(CauseKind.CONDITIONAL_WORK): "work that runs on some steps only",
    str(CauseKind.COLLECTIVE): "other collectives",
    str(CauseKind.DTYPE): "other dtypes",
    str(CauseKind.SHARDING): "other shardings",
    str(CauseKind.LAYOUT): "other layouts",
    str(CauseKind.STATE_INIT): "state made on some steps",
    str(CauseKind.STRUCTURE): "other work",
}


def turn_pairs(
    timeline: Sequence[TimelineEntry], first_sync: Mapping[str, int]
) -> tuple[tuple[str, str], ...]:
    """(against, variant) for each change of graph at one place of consecutive steady steps, first
    seen first. A place is a call site and trigger (a `.item()` mid-step is another program than the
    step's sync, even where a save file knows no line) and the rank among the step's syncs there:
    under torch.compile and torch_xla.compile one step runs several programs from one frame or call
    (the bridge's input sync and the forward; the sync of pending work and the step), which only
    their rank tells apart, and the previous sync there is another program of the same step. Two
    graphs taking turns make the pair both ways: kept once, the later compiled graph against the
    earlier (the recompile's own diff where that was its baseline)."""
    last: dict[tuple[str, str, int], str] = {}
    ranks: Counter[tuple[int, str, str]] = Counter()
    seen: list[tuple[str, str]] = []
    for e in timeline:
        if e.phase != "steady":
            continue
        site = (e.call_site, e.trigger)
        rank = ranks[(e.step, *site)]
        ranks[(e.step, *site)] += 1
        where = (*site, rank)
        before, last[where] = last.get(where), e.variant
        if before is not None and before != e.variant and (before, e.variant) not in seen:
            seen.append((before, e.variant))
    pairs = [(a, b) for a, b in seen if (b, a) not in seen or first_sync.get(b, 0) > first_sync.get(a, 0)]
    return tuple(pairs) if len(pairs) <= _MAX_TURNS else ()


# A fix ID that says more than its kind's phrase: the same collectives, chained in another order; a
# compiled function's result, which no tensor kept alive makes.
_FIX_PHRASES = {
    "collective.order": "the same collectives in another order",
    "output_added.returned": "other outputs returned by the compiled function",
}


def _fix_ids(causes: Sequence[Cause]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(c.fix_id for c in causes if c.fix_id))


def _phrase(kinds: tuple[str, ...], fixes: tuple[str, ...] = ()) -> str:
    said = next((_FIX_PHRASES[f] for f in fixes if f in _FIX_PHRASES), "")
    if said:
        return said
    if kinds and set(kinds) <= _PERMUTATIONS:
        return "the same updates in another order"
    found = (_PHRASES[k] for k in kinds if k in _PHRASES and k not in _PERMUTATIONS)
    return next(found, "graphs that differ" if kinds else "graphs that print the same")


def steady_turns(
    pairs: tuple[tuple[str, str], ...],
    recompiles: Sequence[Recompile],
    diff: Callable[[str, str], Turn],
) -> SteadyTurns | None:
    """Each pair's turn (the recompile's explanation where its baseline is the graph before it,
    else `diff(variant, against)`), and what they say together."""
    if not pairs:
        return None
    by_variant = {r.variant: r for r in recompiles}
    turns = []
    for against, variant in pairs:
        r = by_variant.get(variant)
        # (a retrace's second-call graph read as its warm-up says why it compiled, not why it
        # differs from the other trace's graph it takes turns with: diffed afresh)
        warm_up = r is not None and any(c.case == SECOND_CALL for c in r.causes)
        if (
            r is not None
            and r.baseline is not None
            and r.baseline.variant == against
            and r.causes
            and not warm_up
        ):
            fixes = _fix_ids(r.causes)
            turns.append(Turn(variant, against, r.kinds, r.lines, fixes=fixes, expected=r.expected))
        else:
            turns.append(diff(variant, against))
    kinds = tuple(dict.fromkeys(k for t in turns for k in t.kinds))
    fixes = tuple(dict.fromkeys(f for t in turns for f in t.fixes))
    line = next((t.lines[0] for t in turns if t.lines), "")
    order = tuple(dict.fromkeys(v for a, b in pairs for v in (a, b)))
    return SteadyTurns(order, _phrase(kinds, fixes), kinds, line, tuple(turns))


def diff_turn(target: Sync, against: Sync, run: ReportRun) -> Turn:
    """`target`'s graph against `against`'s as a recompile's would be (the recognizers are told of
    every graph with its first sync, those before `against` among them): causes, then the user's
    lines their attribution cites, then the sync's line."""
    log, triggers = run.log, run.triggers
    assert run.modules is not None  # turns are only looked for in an explained report
    variant, other = run.letters[target.graph_hash], run.letters[against.graph_hash]
    records = log.graphs.get(against.graph_hash), log.graphs.get(target.graph_hash)
    tensors = records[1].tensors if records[1] else ()
    bridged = bridge_synced(log.syncs)
    facts = RunFacts(triggers, run.first_sync, bridged, tensors, implicit_cuts(log.syncs, triggers))
    result = diff_against(target, against, run.modules, facts, list(run.first.items()))
    if isinstance(result, str):
        return Turn(variant, other, (), (), result)
    causes = result.differences
    site = call_site(target.frames)
    ctx = AttributionContext(result, *records, run.user_names, site, run.read_line)
    attribution = [attribute(i, c, ctx) for i, c in enumerate(causes)]
    cited = [line for a in attribution for line in a.lines]
    cited += [t.line for a in attribution for t in a.tensors if t.line]
    kinds = tuple(dict.fromkeys(str(c.kind) for c in causes))
    note = "" if causes else "the two graphs print the same"
    lines = tuple(dict.fromkeys([*cited, *([site] if site else [])]))
    expected = bool(causes) and all(c.info for c in causes)
    return Turn(variant, other, kinds, lines, note, _fix_ids(causes), expected)
