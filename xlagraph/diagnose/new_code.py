"""The cause of a graph that is new code rather than a changed graph: the report finds such a
graph (the first at its call site, the first that reads data, one after the loop: no earlier
graph is a version of it, so a diff's differences are no causes), and diagnosis names it, as it
names a diff's: a program picked by a value read on the host (`conditional_work.host_branch`),
torch.compile's bridge warm-up (`state_init.bridge_sync`), else a graph of its own (`own_graph`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import call_site, location, source_line, split_location
from xlagraph.diagnose.recognizers._host_if import host_decided_if
from xlagraph.ir import Frame
from xlagraph.runlog import Sync
from xlagraph.source_paths import short_location

__all__ = ["GENERIC_NAMES", "new_code_cause"]

# Names torch_xla gives every graph of a plain sync; torch_xla.compile names its own.
GENERIC_NAMES = frozenset({"SyncTensorsGraph", "IrToHlo", ""})

OWN_GRAPH_HINT = fix("own_graph")


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
    sync where this one takes over from it (`report.explain`), else ""."""
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
