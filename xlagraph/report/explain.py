"""One recompile explained against a baseline: the most similar earlier graph from the same call
site. Candidates are the earlier graphs whose first sync had the same user frames (else the same
innermost user line, else any earlier graph), at most `MAX_CANDIDATES` of the most recent; the
closest by structure are compared with `diff_modules` and the closest wins: where one is this graph
reordered, not one that differs only by warm-up state (`state_init`); then the fewest live
instructions involved in its causes, the fewest causes, the most recent (`diagnose.closeness`);
`Baseline.why` says which and why. Its causes are then attributed (`diagnose.attribution`), or
replaced by one where diagnosis finds the graph new code (`diagnose.new_code`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from xlagraph.capture.shardings import MarkSharding, find_marks
from xlagraph.diagnose.attribution import AttributionContext, attribute
from xlagraph.diagnose.bridge import bridged_before
from xlagraph.diagnose.causes import Cause, name_sides, with_sides
from xlagraph.diagnose.closeness import Compared
from xlagraph.diagnose.frames import call_site, source_line, split_frames
from xlagraph.diagnose.listing import plural
from xlagraph.diagnose.new_code import another_call, another_use, new_code, new_code_cause
from xlagraph.report.baseline import RunFacts, choose_baseline, graph_name, implicit_cuts
from xlagraph.report.model import Attribution, Baseline, Recompile
from xlagraph.report.modules import Modules
from xlagraph.report.triggers import LineReader
from xlagraph.runlog import RunLog, Sync


@dataclass(frozen=True)
class ReportRun:
    """What explaining a run's recompiles and its steady turns reads of it, built once per report
    (the forked workers inherit it): each graph's letter and first sync, the graphs (None: not
    explained), the log, each sync's trigger, the user's file names, the source reader, the
    `mark_sharding` calls, the last step marker's index and the last step."""

    letters: dict[str, str]
    first: dict[str, Sync]
    modules: Modules | None
    log: RunLog
    triggers: dict[int, str]
    user_names: frozenset[str]
    read_line: LineReader = source_line
    marks: tuple[MarkSharding, ...] = ()
    last_marker: int = -1
    last_step: int = -1

    @property
    def first_sync(self) -> int:
        """The index of the run's first sync (of its first graph)."""
        return min((s.index for s in self.first.values()), default=0)


def earlier_graphs(target: Sync, first: dict[str, Sync]) -> list[tuple[str, Sync]]:
    """The graphs compiled before `target`, each with its first sync."""
    return [(h, s) for h, s in first.items() if s.index < target.index]


def explain_recompile(target: Sync, run: ReportRun) -> Recompile:
    letters, first, modules, log, triggers = run.letters, run.first, run.modules, run.log, run.triggers
    earlier = earlier_graphs(target, first)
    bridged = bridged_before(target, log.syncs, triggers)
    if modules is None:
        choice, note = None, "not explained"
    else:
        record = log.graphs.get(target.graph_hash)
        tensors = record.tensors if record else ()
        run_facts = RunFacts(triggers, run.first_sync, bridged, tensors, implicit_cuts(log.syncs, triggers))
        choice, note = choose_baseline(target, earlier, modules, run_facts)
    users, library = split_frames(target.frames)
    site = call_site(target.frames)
    causes: tuple[Cause, ...] = ()
    attribution: tuple[Attribution, ...] = ()
    notes: tuple[str, ...] = ()
    first_of_program = False
    if choice is not None and choice.result is not None:
        result = choice.result
        sides = letters[choice.graph_hash], letters[target.graph_hash]
        causes = tuple(with_sides(c, *sides) for c in result.differences)
        records = log.graphs.get(choice.graph_hash), log.graphs.get(target.graph_hash)
        marks_of = partial(find_marks, run.marks) if run.marks else None
        ctx = AttributionContext(
            result, *records, run.user_names, site, run.read_line, marks_of, target.step, sides
        )
        attribution = tuple(attribute(i, c, ctx) for i, c in enumerate(causes))
        notes = tuple(name_sides(n, *sides) for n in result.notes)
        graphs = modules.get(choice.graph_hash), modules.get(target.graph_hash)
        facts = (log.syncs, triggers, first, run.last_marker, bridged)
        names = graph_name(graphs[0]), graph_name(graphs[1])
        verdict = (
            new_code(target, choice.graph_hash, choice.reason, graphs, *facts)
            if site and causes and not another_call(names, causes)
            else None
        )
        if verdict is not None:
            # the nearest earlier graph is another computation: its differences are no causes
            kinds = ", ".join(dict.fromkeys(str(c.kind) for c in causes))
            note = (
                f"the first graph compiled at this call site: the earlier graphs come from other "
                f"lines or another compiled function, so this is new code rather than a changed "
                f"graph (against graph "
                f"{letters[choice.graph_hash]}: {kinds})"
            )
            if verdict.fixed:
                note = (
                    f"the first graph that reads data: the earlier graph {letters[choice.graph_hash]} "
                    f"reads no input and only materializes fixed values, so this is new code rather "
                    f"than a changed graph (against graph {letters[choice.graph_hash]}: {kinds})"
                )
            names = graph_name(graphs[1]), graph_name(graphs[0])
            first_of_program = bool(verdict.when)
            bridge = letters.get(verdict.full_graph, "")
            causes = (new_code_cause(site, users, [s for _, s in earlier], names, verdict.when, bridge),)
            attribution = (Attribution(0, str(causes[0].kind), causes[0].summary, lines=causes[0].sources),)
        elif causes and another_use(target, choice.sync, first, run.last_step):
            first_of_program = True
            note = (
                f"another use of the code of graph {letters[choice.graph_hash]} within the run's first "
                "step, with what differs below: each use compiles once and later steps replay both"
            )
        elif not causes:
            note = (
                "the two graphs print the same: the difference is in what the dump does not show "
                "(compile environment, sharding, buffer donors or elided constants)"
            )
    cited = [line for a in attribution for line in a.lines]
    cited += [t.line for a in attribution for t in a.tensors if t.line]
    if site:
        cited.append(site)
    baseline = None
    if choice is not None:
        compared = tuple(letters[c.graph_hash] for c in choice.compared)
        why = _why(choice.graph_hash, choice.compared, letters)
        baseline = Baseline(letters[choice.graph_hash], choice.sync.index, choice.reason, why, compared)
    return Recompile(
        sync=target.index,
        step=target.step,
        variant=letters[target.graph_hash],
        graph_hash=target.graph_hash,
        call_site=site,
        trigger=triggers[target.index],
        frames=users,
        library_frames=library,
        baseline=baseline,
        causes=causes,
        attribution=attribution,
        lines=tuple(dict.fromkeys(cited)),
        note=note,
        compile_seconds=target.compile_seconds,
        notes=notes,
        first_of_program=first_of_program,
    )


def _why(chosen_hash: str, compared: tuple[Compared, ...], letters: dict[str, str]) -> str:
    """Why the baseline is that one of the candidates diffed (`closeness.closest_of`), in words."""
    chosen = next((c for c in compared if c.graph_hash == chosen_hash), None)
    if chosen is None:
        return ""
    others = [c for c in compared if c is not chosen]
    if not others:
        return "the only earlier graph compared"
    names, me = ", ".join(letters[c.graph_hash] for c in compared), letters[chosen_hash]
    size = (chosen.warm_up, chosen.involved, chosen.causes)
    # The candidate that came closest by size alone, when the warm-up rule passed it over.
    smaller = [c for c in others if c.warm_up and (c.involved, c.causes) < size[1:]]
    if smaller and chosen.reorder:
        older = letters[smaller[0].graph_hash]
        return (
            f"closest of {names}: {older} differs only by warm-up state, "
            f"{me} only by order (the same computation)"
        )
    tied = [letters[c.graph_hash] for c in others if (c.warm_up, c.involved, c.causes) == size]
    if tied:
        return f"closest of {names}: as close as {', '.join(tied)}, and the most recent"
    return f"closest of {names}: the fewest differences ({plural(chosen.involved, 'instruction')})"
