"""One recompile explained against a baseline: the most similar earlier graph from the same call
site. Candidates are the earlier graphs whose first sync had the same user frames (else the same
innermost user line, else any earlier graph), at most `MAX_CANDIDATES` of the most recent; the
closest by structure are compared with `diff_modules` and the closest wins: where one is this graph
reordered, not one that differs only by warm-up state (`state_init`); then the fewest live
instructions involved in its causes, the fewest causes, the most recent (`baseline.py`);
`Baseline.why` says which and why. Its causes are then attributed (`attribution.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from xlagraph.capture.shardings import MarkSharding, find_marks
from xlagraph.diagnose.attribution import AttributionContext, attribute
from xlagraph.diagnose.causes import Cause, name_sides, with_sides
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS
from xlagraph.diagnose.frames import call_site, source_line, split_frames
from xlagraph.diagnose.listing import plural
from xlagraph.diagnose.new_code import new_code_cause
from xlagraph.report.baseline import (
    NEW_CALL_SITE,
    NEW_SYNC_POINT,
    Compared,
    Modules,
    choose_baseline,
    graph_name,
)
from xlagraph.report.model import Attribution, Baseline, Recompile
from xlagraph.report.triggers import LineReader, bridge_sync_all, bridge_synced
from xlagraph.runlog import RunLog, Sync


def _after_bridge_warm_up(
    target: Sync, syncs: Sequence[Sync], triggers: dict[int, str], bridged: dict[int, int]
) -> str | None:
    """torch.compile's bridge syncs the compiled call's inputs, for the first time for that
    compiled module, on a step with no full sync of its own: the module's first call ran the full
    sync instead (when the bridge first compiled it). The graph of that full sync (the one this
    graph takes over from), or None where it is not so. Whichever earlier graph the diff chose as
    the closest (the step's lazy graph can be closer than the full sync's), the graph is the same
    warm-up; a second, other graph at the same sync of the module is a change, not warm-up."""
    if triggers.get(target.index) != "dynamo" or target.step in bridged or not target.frames:
        return None
    module = {f.file for f in target.frames if f.file.startswith("<eval_with_key>")}
    ran = [s for s in syncs if s.index < target.index and module & {f.file for f in s.frames}]
    here = target.frames[0]
    if not ran or any(s.frames[0] == here for s in ran):
        return None
    full = [s for s in syncs if s.index < ran[0].index and bridge_sync_all(s)]
    return full[-1].graph_hash if full else None


# What a graph that only materializes fixed values is made of.
_FIXED = frozenset(
    {"constant", "broadcast", "reshape", "convert", "iota", "tuple", "concatenate", "transpose", "copy"}
)


def constants_only(module: object) -> bool:
    """The module's entry takes no input and computes only from constants: it materializes fixed
    values (a zero buffer moved to the device) and is no version of a step that reads data."""
    entry = getattr(module, "entry", None)
    if entry is None:
        return False
    return all(ins.opcode in _FIXED for ins in entry.instructions)


def earlier_graphs(target: Sync, first: dict[str, Sync]) -> list[tuple[str, Sync]]:
    """The graphs compiled before `target`, each with its first sync."""
    return [(h, s) for h, s in first.items() if s.index < target.index]


def _in_first_step(target: Sync, first: dict[str, Sync], last_step: int | None = None) -> bool:
    """No step has ended before `target`'s (every earlier graph first ran in its step), and, when
    `last_step` is given, later steps follow to show what replays."""
    earlier = all(s.step == target.step for s in first.values() if s.index < target.index)
    return earlier and (last_step is None or last_step > target.step)


_STEP_SYNCS = frozenset({"sync", "mark_step"})


def _read_after_step_sync(
    target: Sync, baseline: str, syncs: Sequence[Sync], triggers: dict[int, str]
) -> bool:
    """An implicit sync whose line follows the step marker's line in the same function (a print
    just after `mark_step()`, journaled at the top of the next step) reads values the step already
    computed; when the baseline graph still runs unchanged in that step, nothing was cut out of
    it: the read is work of its own, not a graph break."""
    here = next(iter(split_frames(target.frames)[0]), None)
    marker = next(
        (s for s in reversed(syncs) if s.index < target.index and triggers.get(s.index) in _STEP_SYNCS), None
    )
    there = next(iter(split_frames(marker.frames)[0]), None) if marker else None
    if here is None or there is None or (here.file, here.function) != (there.file, there.function):
        return False
    replays = any(
        s.step == target.step and s.index != target.index and s.graph_hash == baseline for s in syncs
    )
    return there.line < here.line and replays


def explain_recompile(
    target: Sync,
    letters: dict[str, str],
    first: dict[str, Sync],
    modules: Modules | None,
    log: RunLog,
    triggers: dict[int, str],
    user_names: frozenset[str],
    read_line: LineReader = source_line,
    marks: tuple[MarkSharding, ...] = (),
    last_marker: int = -1,
    last_step: int = -1,
) -> Recompile:
    earlier = earlier_graphs(target, first)
    first_sync = min((s.index for s in first.values()), default=0)
    bridged = bridge_synced(log.syncs)
    if not any(s.step == target.step and s.index <= target.index and triggers.get(s.index) == "dynamo"
               for s in log.syncs):
        # The compiled program did not run on this step (dynamo gave up on it at its recompile
        # limit, or the step never calls it): no work of the bridge's comes back here.
        bridged = {}
    if modules is None:
        choice, note = None, "not explained"
    else:
        record = log.graphs.get(target.graph_hash)
        tensors = record.tensors if record else ()
        choice, note = choose_baseline(target, earlier, modules, triggers, first_sync, bridged, tensors)
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
        marks_of = partial(find_marks, marks) if marks else None
        ctx = AttributionContext(result, *records, user_names, site, read_line, marks_of, target.step, sides)
        attribution = tuple(attribute(i, c, ctx) for i, c in enumerate(causes))
        notes = tuple(name_sides(n, *sides) for n in result.notes)
        # A value read after the last step marker (final metrics after the loop) is a graph of
        # its own too, though its sync is implicit: no step follows for it to have cut.
        after_loop = 0 <= last_marker < target.index
        # A baseline that reads no input and only materializes fixed values (a buffer's zero moved
        # to the device, flushed at the loader's first step marker) is no earlier version of
        # this graph: whatever it is compared with is new code too.
        fixed = (
            choice.reason not in (NEW_SYNC_POINT, NEW_CALL_SITE)
            and constants_only(modules.get(choice.graph_hash))
            and not constants_only(modules.get(target.graph_hash))
        )
        new_code = (
            choice.reason == NEW_SYNC_POINT
            or (
                choice.reason == NEW_CALL_SITE
                and (
                    triggers[target.index] not in IMPLICIT_TRIGGERS
                    or after_loop
                    or _read_after_step_sync(target, choice.graph_hash, log.syncs, triggers)
                )
            )
            or fixed
        )
        if new_code and site and causes:
            # New code, not a changed graph: the nearest earlier graph is another computation
            # (an evaluation before the first training step), so its differences are no causes.
            kinds = ", ".join(dict.fromkeys(str(c.kind) for c in causes))
            note = (
                f"the first graph compiled at this call site: the earlier graphs come from other "
                f"lines or another compiled function, so this is new code rather than a changed "
                f"graph (against graph "
                f"{letters[choice.graph_hash]}: {kinds})"
            )
            if fixed:
                note = (
                    f"the first graph that reads data: the earlier graph {letters[choice.graph_hash]} "
                    f"reads no input and only materializes fixed values, so this is new code rather "
                    f"than a changed graph (against graph {letters[choice.graph_hash]}: {kinds})"
                )
            names = (graph_name(modules.get(target.graph_hash)), graph_name(modules.get(choice.graph_hash)))
            # Before any earlier step ended (the pending graph of torch_xla.compile, then the step
            # function) or after the loop, it is a program starting or ending: not work that some
            # steps add (an evaluation between epochs), and not a recompile.
            when = (
                "after the loop"
                if after_loop
                else "first step"
                if _in_first_step(target, first)
                else "after constants"
                if fixed
                else ""
            )
            first_of_program = bool(when)
            full_graph = _after_bridge_warm_up(target, log.syncs, triggers, bridged)
            bridge = letters.get(full_graph or "", "")
            causes = (new_code_cause(site, users, [s for _, s in earlier], names, when, bridge),)
            attribution = (Attribution(0, str(causes[0].kind), causes[0].summary, lines=causes[0].sources),)
        elif causes and choice.sync.step == target.step and _in_first_step(target, first, last_step):
            # The same code run again within the run's first step with other sizes (a query and a
            # passage encoder, each cut at a library sync): each use compiles once, every step
            # replays both, so what differs is no change over steps.
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
    """Why the baseline is that one of the candidates diffed (`baseline._score`), in words."""
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
