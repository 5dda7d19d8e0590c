"""Where the order of inputs or outputs was decided in the user's code, cited first on a
reordering: the loop that updates the tensors one by one (its header and what builds what it
iterates), the loop the capture saw call the helper that made them, a statement that reorders a
sequence, a dict of statistics filled, hooks registered in order. Used by `permutation`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import Evidence
from xlagraph.diagnose.frames import is_user_location, location, split_frames, split_location
from xlagraph.diagnose.recognizers._assignments import dict_fills, reorderings
from xlagraph.diagnose.recognizers._deciding_loop import MAX_CALLERS, MAX_TENSORS, deciding_loops, sync_lines
from xlagraph.diagnose.recognizers._source import calls_of_function, def_above, user_files, user_lines
from xlagraph.diagnose.recognizers._user_flow import hook_registrations
from xlagraph.ir import strip_layout

__all__ = ["called_from_loop", "filled_at"]


def _reordered_in_step(evidence: Evidence) -> list[str]:
    """Statements that reorder a sequence in any function of the user's code the graphs ran
    (`random.shuffle(order)` in a model's forward that applies its blocks in that order): the
    tensors the step creates follow the order the code ran in, wherever it was decided."""
    found: dict[str, None] = {}
    done: set[tuple[str, int]] = set()
    for loc in user_lines(evidence):
        file, _, line = loc.rpartition(":")
        function = (file, def_above(file, int(line)))
        if not function[1] or function in done:
            continue
        done.add(function)
        for r in reorderings(loc):
            found.setdefault(r)
    return list(found)[:3]


def _calling_loop(user: list[str], syncs: tuple[str, ...], files: Sequence[str] = ()) -> list[str]:
    """The loop that calls the functions of several cited lines in turn (`for meter in
    self.meters.values(): meter.update(out)`, each meter's `update` a method of its own class):
    the order of what it iterates is the order of the tensors they update; also a loop that calls
    its variable over the functions themselves (`for update in (a, b) if flag else (b, a):
    update()`), whose header picks the order; and a loop that calls them through a table of
    functions (`UPDATERS[name](...)`, in any of the user's `files`). Only a loop reached
    from two or more of those functions, so one helper called from a loop is not taken for it."""
    calls: dict[str, list[str]] = {}  # each function's call sites
    for loc in user:
        file, line = split_location(loc)
        function = def_above(file, line) if line else ""
        if function:
            calls.setdefault(f"{file}:{function}", []).extend(
                calls_of_function(loc, limit=5, through_loops=True, tables_in=files)
            )
    return deciding_loops(calls.values(), syncs, reached_by=2)


def _callers_at_runtime(evidence: Evidence, cause: Cause) -> list[list[str]]:
    """Where the user's code called the cited lines that made the moved outputs, read from the
    live tensors the capture saw before the sync (their frames): of each tensor of a moved shape
    made on a cited line (the most recent first), the two user frames above it."""
    moved = [m.shape for m in cause.mapping if m.left != m.right]
    shapes, cited = set(moved), set(cause.sources)
    made = []
    for t in evidence.context.tensors:
        users = split_frames(t.frames)[0]
        if users and location(users[0]) in cited and strip_layout(t.shape).replace(" ", "") in shapes:
            made.append((-t.id, users))
    made.sort(key=lambda m: m[0])
    if len(made) >= len(moved):
        made = made[: max(len(moved), MAX_TENSORS)]
    return [[location(f) for f in users[1:MAX_CALLERS]] for _, users in made]


def _stored_at_runtime(evidence: Evidence, cause: Cause) -> list[list[str]]:
    """Where the user's code stores the graph's outputs of the moved shapes that the capture saw
    made nowhere (no frames: a graph compiled while source lines were off): of each, the lines
    that put it where the program keeps it (`self.stats[name] = (update(v, ...), update)` in the
    loop over the statistics), the most recent first. Storing the new value is how the step met
    it, so the loop around that statement ordered it as a loop around its making would."""
    # (imported here: the attribution package imports the diff, which imports the recognizers)
    from xlagraph.diagnose.attribution.holders import storing_lines

    moved = [m.shape for m in cause.mapping if m.left != m.right]
    shapes = set(moved)
    kept = sorted(
        (t for t in evidence.context.tensors if t.pending and not t.frames and t.holders),
        key=lambda t: -t.id,
    )
    found = [
        list(lines)
        for t in kept
        if strip_layout(t.shape).replace(" ", "") in shapes and (lines := storing_lines(t.holders[0], ()))
    ]
    return found[: max(len(moved), MAX_TENSORS)]


def _loop_calling_store(stored: list[list[str]], syncs: tuple[str, ...], files: Sequence[str]) -> list[str]:
    """One statement that stores two or more of the moved tensors (`self.total = self.total + v`
    in a meter's `add`) runs once per tensor: the loop that calls its function (`for m in meters:
    m.add(...)`) ran it in that loop's order."""
    firsts = [lines[0] for lines in stored if lines]
    shared = [loc for loc in dict.fromkeys(firsts) if firsts.count(loc) >= 2]
    calls = [calls_of_function(loc, limit=5, through_loops=True, tables_in=files) for loc in shared]
    return deciding_loops(calls, syncs)


def called_from_loop(evidence: Evidence, cause: Cause) -> Cause:
    """Outputs updated by a helper the user's code calls from a loop come in that loop's order: its
    header and what builds or flips what it iterates (`loop_order`; not the training loop around
    the sync) come first. The loop is the one the capture saw call the helper at runtime, or,
    where it saw no frames, the one around the statement that stores them."""
    if cause.kind is not CauseKind.OUTPUT_PERMUTATION:
        return cause
    syncs = sync_lines(evidence.context)
    stored = _stored_at_runtime(evidence, cause)
    order = (
        deciding_loops(_callers_at_runtime(evidence, cause), syncs)
        or deciding_loops(stored, syncs)
        or _loop_calling_store(stored, syncs, user_files(evidence))
    )
    if not order:
        return cause
    return replace(cause, sources=tuple(dict.fromkeys((*order, *cause.sources))))


def filled_at(evidence: Evidence, cause: Cause) -> Cause:
    """Where the order was decided: a dict of statistics filled (outputs), a statement that
    reorders a sequence (both: inputs are met in the order the step's code used them)."""
    if cause.kind is CauseKind.OUTPUT_PERMUTATION:
        fills = [f for loc in cause.sources[:2] for f in dict_fills(loc)]
    else:
        fills = []
    # A statement that reorders a sequence in that function (a task list rotated each step)
    # decides the order: it comes first; where it has none, one in the code the step ran.
    reorders = [r for loc in cause.sources[:2] for r in reorderings(loc)]
    if not reorders and not fills:
        reorders = _reordered_in_step(evidence)
    # The loop that updates the tensors one by one decides their order: its header and the lines
    # that build what it iterates, before every other line (none of which is dropped).
    syncs = sync_lines(evidence.context)
    user = [x for x in cause.sources if is_user_location(x)]
    loops = deciding_loops([user[:3]], syncs)
    if not loops and not reorders:
        loops = _calling_loop(user[:3], syncs, user_files(evidence))
    # Tensors updated inside forward hooks come out in the order the hooks were registered.
    hooks = hook_registrations(user[:3]) if not reorders else []
    if not fills and not reorders and not loops and not hooks:
        return cause
    lines = dict.fromkeys([*hooks, *loops, *reorders, *fills, *cause.sources])
    return replace(cause, sources=tuple(lines)[: 6 + len(loops)])
