"""Which of the user's loops decides an order (issue 39: one rule, one place): tensors updated or
collectives issued one per turn come in the order of what the loop iterates (`loop_order`), or of
an `if` whose two branches run the same statements in another order (`if peak_first: a(); b()` /
`else: b(); a()`, read from the stored file's syntax tree). Every cause that cites such a loop
asks here, from the lines the graph cites, a cited helper's call sites or the runtime frames of
the live tensors alike."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from xlagraph.diagnose.evidence import Context
from xlagraph.diagnose.frames import is_library, location, split_frames, split_location
from xlagraph.diagnose.recognizers._loop_order import loop_order
from xlagraph.diagnose.recognizers._statements import SCOPES, enclosing
from xlagraph.runlog import LiveTensor

__all__ = ["MAX_CALLERS", "MAX_TENSORS", "branch_order", "deciding_loops", "issuing_lines", "sync_lines"]

# At most this many live tensors made on a cited line are followed to their callers, unless more
# outputs moved; and each tensor's two frames above the line that made it (the report's
# attribution lists its candidates by the same bounds).
MAX_TENSORS = 4
MAX_CALLERS = 3


def sync_lines(context: Context) -> tuple[str, ...]:
    """The user's lines of the two graphs' syncs: the loop around one runs the steps, it orders
    nothing of a step's."""
    return tuple(s for s in (context.call_site, context.baseline_call_site) if s)


def _reordered(stmt: ast.If) -> bool:
    """Body and `else` hold the same statements (as code, wherever they sit), in another order."""
    body = [ast.dump(s) for s in stmt.body]
    other = [ast.dump(s) for s in stmt.orelse]
    return len(body) >= 2 and body != other and sorted(body) == sorted(other)


def branch_order(location: str) -> list[str]:
    """`file:line` of the innermost `if` around `location`, inside its function, whose branches
    run the same statements in another order; [] when there is none."""
    file, line = split_location(location)
    if not file or not line:
        return []
    for stmt, _ in reversed(enclosing(file, line)):
        if isinstance(stmt, SCOPES):
            break
        if isinstance(stmt, ast.If) and _reordered(stmt):
            return [f"{file}:{stmt.lineno}"]
    return []


def deciding_loops(
    candidates: Iterable[Iterable[str]], syncs: tuple[str, ...], reached_by: int = 1
) -> list[str]:
    """The lines that decide the order of the loops around the candidate lines, in the order first
    met. Candidates come in groups (one helper's call sites, one tensor's callers); only a loop
    reached from `reached_by` groups or more counts, so one helper called from a loop is not
    taken for the loop that orders several. `syncs`: the sync lines, whose loop runs the steps."""
    reached: dict[str, set[int]] = {}
    for k, group in enumerate(candidates):
        for line in group:
            # (an `if` whose branches run the same updates in another order decides like a loop)
            for n in loop_order(line, syncs) or branch_order(line):
                reached.setdefault(n, set()).add(k)
    return [n for n, groups in reached.items() if len(groups) >= reached_by]


def issuing_lines(
    library_lines: Iterable[str], tensors: Iterable[LiveTensor], syncs: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """Where the user's code called the library lines a cause's ops come from (a collective's
    metadata names torch_xla's `xla_model.py` alone), read from the live tensors made there: the
    line of each such call and its callers, then the loop around the call that decides the order
    of the calls where one does (`deciding_loops`)."""
    wanted = set(library_lines)
    issued: list[str] = []
    calls: list[list[str]] = []
    for t in tensors:
        if not t.frames or location(t.frames[0]) not in wanted:
            continue
        users = split_frames(t.frames)[0]
        if users:
            issued += [location(f) for f in t.frames[1:MAX_CALLERS] if not is_library(f)]
            calls.append([location(users[0])])
    return tuple(dict.fromkeys((*issued, *deciding_loops(calls, syncs))))
