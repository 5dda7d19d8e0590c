"""The `if` around a line whose condition a device value read on the host decides: the test
reads a tensor itself (`if loss.item() > t:`) or calls a function of the user's that does
(`if guard.check(loss):`, `check` reading `loss.item()`): the step syncs there, and Python then
picks which code the step traces, so each outcome is a graph of its own."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._host_flag import flag_set_on_host, flag_test
from xlagraph.diagnose.recognizers._host_numbers import definitions
from xlagraph.diagnose.recognizers._set_before import read_into
from xlagraph.diagnose.recognizers._statements import called_functions, enclosing, is_host_read, reads_on_host

__all__ = ["host_decided_if", "read_before"]

# How deep to follow the user's calls from the condition (a guard calling its own helper).
_DEPTH = 2


def host_decided_if(location: str, files: Iterable[str] = ()) -> tuple[str, ...]:
    """(`file:line` of the nearest `if` whose block holds `location` and whose condition reads a
    device value on the host, then the lines of the user's functions it calls that read it), or
    () when the nearest `if` has no such condition. Only the nearest: a check nested in another
    `if` is what decides for its block."""
    file, line = split_location(location)
    if not file or not line:
        return ()
    # A plain flag tested at the line (or by the `if` around it) that a host read sets: the test,
    # then the lines that set it.
    tested, at, names = flag_test(location)
    if tested and (setters := flag_set_on_host(tested, names)):
        return (f"{tested}:{at}", *setters)
    ifs = [s for s, _ in enclosing(file, line) if isinstance(s, ast.If) and s.lineno != line]
    # In the block, not the test: a line of the test itself is the read, not work it decides.
    ifs = [
        s for s in ifs if any(b.lineno <= line <= (b.end_lineno or b.lineno) for b in (*s.body, *s.orelse))
    ]
    if not ifs:
        return ()
    test = ifs[-1].test
    site = f"{file}:{ifs[-1].lineno}"
    if reads_on_host(test):
        return (site,)
    # A name the test reads, set from a host read above it (`value = gnorm.item()`).
    assigned = read_into(file, ifs[-1])
    if assigned:
        return (site, *(f"{file}:{n}" for n in assigned))
    defs = {name: [d] for name, d in definitions([file, *files]).items()}
    lines = _reads_through(test, defs, _DEPTH)
    return (site, *lines) if lines else ()


def read_before(site: str) -> tuple[str, ...]:
    """The lines above the `if` at `site` that set a name its test reads from a host read
    (`value = gnorm.item()` over `if value > MAX_NORM:`), or ()."""
    file, line = split_location(site)
    chain = enclosing(file, line) if file and line else []
    if not chain or not isinstance(chain[-1][0], ast.If) or chain[-1][0].lineno != line:
        return ()
    return tuple(f"{file}:{n}" for n in read_into(file, chain[-1][0]))


def _reads_through(
    node: ast.AST, defs: dict[str, list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]], depth: int
) -> list[str]:
    """The `file:line`s where the user's functions `node` calls read a tensor on the host (a
    function that reads is not followed further)."""
    reached = called_functions(node, defs, depth, lambda d: d[1], lambda d: reads_on_host(d[1]))
    lines = (f"{file}:{n.lineno}" for file, f in reached for n in ast.walk(f) if is_host_read(n))
    return list(dict.fromkeys(lines))
