"""A graph that is new code rather than a changed graph, and its cause. `new_code` decides it
(the first graph at its call site, the first that reads data, one after the loop: no earlier
graph is a version of it, so a diff's differences are no causes) and `another_use` the same code
run again with other sizes within the run's first step; `new_code_cause` names it, as a diff's
causes are named: a program picked by a value read on the host (`conditional_work.host_branch`),
torch.compile's bridge warm-up (`state_init.bridge_sync`), else a graph of its own (`own_graph`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xlagraph.diagnose.bridge import bridge_sync_all
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import call_site, location, source_line, split_frames, split_location
from xlagraph.diagnose.recognizers._host_if import host_decided_if
from xlagraph.ir import Frame, Module
from xlagraph.runlog import Sync
from xlagraph.source_paths import short_location

__all__ = [
    "GENERIC_NAMES",
    "NEW_CALL_SITE",
    "NEW_SYNC_POINT",
    "NewCode",
    "another_call",
    "another_use",
    "constants_only",
    "new_code",
    "new_code_cause",
]

# Names torch_xla gives every graph of a plain sync; torch_xla.compile names its own.
GENERIC_NAMES = frozenset({"SyncTensorsGraph", "IrToHlo", ""})

OWN_GRAPH_HINT = fix("own_graph")

# How a baseline was chosen (`report.baseline`) where no earlier graph shares the call site: a
# graph compared only with another computation's.
NEW_CALL_SITE = "nearest earlier graph: none from this call site"
# An implicit sync inside library code (transformers' mask helpers call .all() / .any()) at a
# library line no earlier graph of this call site synced at: another helper's graph, not a change.
NEW_SYNC_POINT = "nearest earlier graph: none synced at this library line"


@dataclass(frozen=True)
class NewCode:
    """A graph that is new code: `when` the run is starting or ending ("first step", "after the
    loop", "after constants": a program's first graph, not a recompile; "" otherwise), `fixed`
    the baseline only materializes fixed values, `full_graph` the graph of the bridge's first full
    sync this one takes over from ("" where none)."""

    when: str
    fixed: bool
    full_graph: str


def new_code(
    target: Sync,
    baseline: str,
    reason: str,
    graphs: tuple[Module | str, Module | str],
    syncs: Sequence[Sync],
    triggers: Mapping[int, str],
    first: Mapping[str, Sync],
    last_marker: int,
    bridged: Mapping[int, int],
) -> NewCode | None:
    """Whether `target`'s graph, compared with the graph `baseline` (chosen for `reason`), is new
    code rather than a changed graph; `graphs` the two modules (baseline, target), `first` each
    graph's first sync, `last_marker` the last step marker's sync, `bridged` step -> the bridge's
    full sync (`bridge_synced`). None where it is a changed graph."""
    # A value read after the last step marker (final metrics after the loop) is a graph of its
    # own too, though its sync is implicit: no step follows for it to have cut.
    after_loop = 0 <= last_marker < target.index
    # A baseline that reads no input and only materializes fixed values (a buffer's zero moved to
    # the device, flushed at the loader's first step marker) is no earlier version of this graph.
    fixed = (
        reason not in (NEW_SYNC_POINT, NEW_CALL_SITE)
        and constants_only(graphs[0])
        and not constants_only(graphs[1])
    )
    new = (
        reason == NEW_SYNC_POINT
        or (
            reason == NEW_CALL_SITE
            and (
                triggers[target.index] not in IMPLICIT_TRIGGERS
                or after_loop
                or _read_after_step_sync(target, baseline, syncs, triggers)
            )
        )
        or fixed
    )
    if not new:
        return None
    # Before any earlier step ended (the pending graph of torch_xla.compile, then the step
    # function) or after the loop, it is a program starting or ending: not work that some steps
    # add (an evaluation between epochs), and not a recompile.
    when = (
        "after the loop"
        if after_loop
        else "first step"
        if _in_first_step(target, first)
        else "after constants"
        if fixed
        else ""
    )
    return NewCode(when, fixed, _after_bridge_warm_up(target, syncs, triggers, bridged) or "")


# What calling one compiled function for more or fewer of its values changes.
_RETURNED = frozenset({CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED})


def another_call(names: tuple[str, str], causes: Sequence[Cause]) -> bool:
    """The same function `torch_xla.compile` traced (`names`: the names it gave both graphs), called
    from another line for more or fewer of its values (`return loss, images` on logging steps): a
    changed graph of that function, whose outputs are the cause, not new code at a new call site."""
    return names[0] == names[1] and names[0] not in GENERIC_NAMES and all(c.kind in _RETURNED for c in causes)


def another_use(target: Sync, baseline: Sync, first: Mapping[str, Sync], last_step: int) -> bool:
    """The same code run again within the run's first step with other sizes (a query and a
    passage encoder, each cut at a library sync): each use compiles once, every step replays
    both, so what differs is no change over steps."""
    return baseline.step == target.step and _in_first_step(target, first, last_step)


# What a graph that only materializes fixed values is made of.
_FIXED = frozenset(
    {"constant", "broadcast", "reshape", "convert", "iota", "tuple", "concatenate", "transpose", "copy"}
)


def constants_only(module: Module | str | None) -> bool:
    """The module's entry takes no input and computes only from constants: it materializes fixed
    values (a zero buffer moved to the device) and is no version of a step that reads data."""
    entry = getattr(module, "entry", None)
    if entry is None:
        return False
    return all(ins.opcode in _FIXED for ins in entry.instructions)


def _in_first_step(target: Sync, first: Mapping[str, Sync], last_step: int | None = None) -> bool:
    """No step has ended before `target`'s (every earlier graph first ran in its step), and, when
    `last_step` is given, later steps follow to show what replays."""
    earlier = all(s.step == target.step for s in first.values() if s.index < target.index)
    return earlier and (last_step is None or last_step > target.step)


_STEP_SYNCS = frozenset({"sync", "mark_step"})


def _read_after_step_sync(
    target: Sync, baseline: str, syncs: Sequence[Sync], triggers: Mapping[int, str]
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


def _after_bridge_warm_up(
    target: Sync, syncs: Sequence[Sync], triggers: Mapping[int, str], bridged: Mapping[int, int]
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


def new_code_cause(
    site: str,
    users: tuple[Frame, ...],
    earlier: Sequence[Sync],
    names: tuple[str, str],
    when: str = "",
    full_graph: str = "",
) -> Cause:
    """`names`: the names `torch_xla.compile` gave this graph and the chosen earlier one; `when`:
    where the run is (first step, after the loop, after constants: a program starting or ending,
    which no value read on the host picks); `full_graph`: the graph of the bridge's first full
    sync where this one takes over from it (`NewCode.full_graph`), else ""."""
    decided = () if when else _picked_by_host(site, users, earlier)
    if decided:
        return _host_picked(site, decided, *names)
    if full_graph:
        return _bridge_inputs(site, users, full_graph)
    return _own_graph(site, users, *names, when=when)


def _own_graph(site: str, users: tuple[Frame, ...], name: str = "", other: str = "", when: str = "") -> Cause:
    """The first graph of another call site (or of another `torch_xla.compile` function): work
    this run syncs somewhere else than the earlier graphs (an evaluation pass after each epoch),
    named with the user's lines that reach it (expected)."""
    lines = tuple(dict.fromkeys([site, *(location(f) for f in users)]))[:4]
    if name not in GENERIC_NAMES and name != other:
        what = f"the graph torch_xla.compile names {name}, another program than {other or 'the earlier ones'}"
        if other == f"{name}_clear_pending":
            what += " (the ops pending before the call, run first as a graph of their own)"
    else:
        what = f"a graph of its own for the work synced at {short_location(site)}"
    why = {
        "first step": "the code since the previous sync of the run's first step (or other code that "
        "starts the run), compiled once and replayed by later steps",
        "after the loop": "work read after the loop's last step (a final metric), compiled once",
        "after constants": "the first graph that reads data, after graphs that only materialized fixed "
        "values (buffers moved to the device, zeros); compiled once and replayed by later steps",
    }.get(
        when,
        "code that runs at another point than the earlier graphs (an evaluation pass, metrics, a "
        "compiled function); compiled once, reused when it runs again",
    )
    return Cause(
        CauseKind.CONDITIONAL_WORK,
        f"{what}: {why}",
        OWN_GRAPH_HINT,
        info=True,
        sources=lines,
    )


def _bridge_inputs(site: str, users: tuple[Frame, ...], full: str) -> Cause:
    lines = tuple(dict.fromkeys([site, *(location(f) for f in users)]))[:4]
    summary = (
        f"torch.compile's warm-up: the openxla bridge synced all pending work when it first compiled "
        f"(graph {full}); from this step on it syncs only the compiled graph's inputs, a graph of "
        "its own, compiled once and replayed by later steps"
    )
    return Cause(CauseKind.STATE_INIT, summary, fix("state_init.bridge_sync"), info=True, sources=lines)


def _picked_by_host(site: str, users: tuple[Frame, ...], earlier: Sequence[Sync]) -> tuple[str, ...]:
    """The `if` (and the lines that read) whose test reads a device value on the host and whose
    other branch called a program compiled earlier: the read picks one compiled function or the
    other (`damped_update()` or `update()`). () where the call is no such pick: the first of the
    two to run is the step's own program."""
    files = [f.file for f in users]
    decided = host_decided_if(site, files)
    if not decided:
        return ()
    for s in earlier:
        there = call_site(s.frames)
        if there and there != site and host_decided_if(there, files)[:1] == decided[:1]:
            return decided
    return ()


def _host_picked(site: str, decided: tuple[str, ...], name: str, other: str) -> Cause:
    """A program first compiled mid-run whose call sits in an `if` that a device value read on the
    host decides (`if guard.check(loss): damped_update()`, torch_xla.compile or eager mode): the
    read picks which compiled code runs, so the step's graphs change on the step the value first
    crosses the line: work a Python condition decides, not an evaluation pass."""
    what = f"the graph torch_xla.compile names {name}" if name not in GENERIC_NAMES else "a graph of its own"
    test = source_line(*split_location(decided[0])).split("#", 1)[0].strip()
    reads = f" (read at {', '.join(decided[1:])})" if decided[1:] else ""
    return Cause(
        CauseKind.CONDITIONAL_WORK,
        f"{what}, called at {short_location(site)} inside `{test[:80]}` at {decided[0]}: a tensor's value "
        f"read on the host{reads} decides which compiled code the step runs, compiled when the value "
        f"first picks it",
        fix("conditional_work.host_branch"),
        sources=tuple(dict.fromkeys([*decided, site]))[:6],
    )
