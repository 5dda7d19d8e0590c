"""Work done on some steps only: the `if ... % k:` blocks (and flags set from the step count)
around a line or inside the training loop, and the lines that call a helper from such a block."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

from xlagraph.diagnose.frames import source_line
from xlagraph.diagnose.recognizers._assignments import assignment_above
from xlagraph.diagnose.recognizers._set_before import read_into
from xlagraph.diagnose.recognizers._source import NAME, calls_of_function, source_text
from xlagraph.diagnose.recognizers._statements import (
    HOST_READS,
    LOOPS,
    SCOPES,
    call_name,
    enclosing_at,
    is_host_read,
    loads,
    reads_on_host,
)

__all__ = [
    "enclosing_if",
    "inside_periodic_if",
    "periodic_caller",
    "periodic_if",
    "periodic_in_loop",
    "reads_tensor",
    "reports_only",
]


def _guards(location: str, stops: tuple[type[ast.stmt], ...] = ()) -> Iterator[tuple[str, ast.If]]:
    """(file, `if`) of the `if`/`elif` blocks (body or `else`) that hold `location`, innermost
    first, up to the nearest statement of `stops` around it (`_statements.enclosing`: the whole
    file's syntax tree, so a block of any length and an `else` are read as the code runs them)."""
    file, line, chain = enclosing_at(location)
    if chain and chain[-1][0].lineno == line:  # the line's own statement, and for an `elif`
        # the `if` it continues (a header's continuation line is in its `if`)
        own = chain.pop()[0]
        while chain and isinstance(own, ast.If) and own.col_offset == chain[-1][0].col_offset:
            own = chain.pop()[0]
    for stmt, _ in reversed(chain):
        if isinstance(stmt, stops):
            return
        if isinstance(stmt, ast.If):
            yield file, stmt


def inside_periodic_if(location: str) -> bool:
    """`file:line` sits in an `if ... % ...:` block (work done every k steps)."""
    return bool(periodic_if(location))


def periodic_if(location: str) -> str:
    """`file:line` of the `if ... % ...:` whose block holds `location`, or ""."""
    for file, stmt in _guards(location):
        if "%" in source_line(file, stmt.lineno) or _periodic_flag(file, stmt):
            return f"{file}:{stmt.lineno}"
    return ""


# What ends the search for the `if` around a line: the function or class it is in (`async`
# statements too, as the text scan before did), or the loop.
_FUNCTION = (*SCOPES, ast.AsyncFor, ast.AsyncWith)
_BLOCKS = (*_FUNCTION, *LOOPS)


def enclosing_if(location: str) -> str:
    """`file:line` of the nearest `if`/`elif` whose block holds `location` inside its loop or
    function, or ""; `if __name__ == ...` is the script's body, not a condition of the step."""
    guards = (
        f"{file}:{s.lineno}" for file, s in _guards(location, _BLOCKS) if "__name__" not in loads(s.test)
    )
    return next(guards, "")


# Calls that print or log what is already computed (`logger.info`, `print`), and the host-side
# helpers their arguments may call (formatting, the wall clock) without making graph work.
_REPORTS = frozenset({"print", "info", "debug", "warning", "log"})
_HOST_HELPERS = frozenset({"float", "int", "str", "round", "abs", "len", "format", "time", "perf_counter"})


def reports_only(location: str) -> bool:
    """The statement at `location` prints or logs values the step already computed
    (`print(f"loss {loss.item():.4f}")`): it reads results and computes no work of the graph,
    whatever the step does on the other steps. A call inside it on anything but a name
    (`model(x).sum().item()`) could compute, so it does not count."""
    chain = enclosing_at(location)[2]
    stmt = chain[-1][0] if chain else None
    if not (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and call_name(stmt.value.func) in _REPORTS
    ):
        return False
    inner = [
        n for a in (*stmt.value.args, *stmt.value.keywords) for n in ast.walk(a) if isinstance(n, ast.Call)
    ]
    return all(
        call_name(c.func) in _HOST_HELPERS
        or (
            is_host_read(c)
            and isinstance(c.func, ast.Attribute)
            and isinstance(c.func.value, (ast.Name, ast.Attribute))
        )
        for c in inner
    )


_HOST_READ = re.compile(rf"\.({'|'.join(sorted(HOST_READS))})\(\)")


def reads_tensor(code: str) -> bool:
    """The code reads a tensor's value on the host (`n.item() > 0`): an implicit sync."""
    return bool(_HOST_READ.search(code))


def synced_if(location: str) -> str:
    """`file:line` of an `if`/`elif` holding `location` (through loops, within its function)
    whose condition reads a tensor on the host (`if total.item() > max_norm:`, or a name set from
    such a read above it: `value = total.item()`, `if value > max_norm:`), or "": the
    data-dependent condition that decides, not a check nested in its block (`if p.grad is not
    None:` in a loop over the weights)."""
    guards = (
        f"{file}:{s.lineno}"
        for file, s in _guards(location, _FUNCTION)
        if reads_on_host(s.test) or read_into(file, s)
    )
    return next(guards, "")


def _periodic_flag(file: str, guard: ast.If) -> bool:
    """`if want_maps:` where `want_maps = step % k == k - 1` a few lines above: a flag that holds
    the every-k-steps test (the nearest assignment of a name the condition reads, 40 lines up)."""
    nearest = assignment_above(f"{file}:{guard.lineno}", 40, _words(guard.test))
    return nearest is not None and _has_mod(nearest.value)  # type: ignore[attr-defined]


def _has_mod(node: ast.AST) -> bool:
    """`node` takes a remainder (`step % k`)."""
    return any(isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mod) for v in ast.walk(node))


def periodic_caller(location: str, files: Iterable[str] = ()) -> str:
    """`location` itself when it sits in an `if ... % k:` block; else the first line of the same
    file that calls the function `location` is in from such a block (a helper that computes
    grad-norm statistics, called every k steps), looked for in `files` too; `` when neither."""
    if inside_periodic_if(location):
        return location
    calls = calls_of_function(location, files, limit=50)
    direct = next((c for c in calls if inside_periodic_if(c)), "")
    if direct:
        return direct
    # One level further: a method called by the user's helper (`relora_merge` calls each adapter's
    # `merge_and_restart`), the helper called from the `if ... % k:` block.
    return next(
        (c2 for c in calls[:5] for c2 in calls_of_function(c, files, limit=10) if inside_periodic_if(c2)), ""
    )


def periodic_in_loop(call_site: str) -> list[str]:
    """The statements inside `if ... % k:` blocks of the loop around `call_site` (the step's
    sync): where work done only on some steps comes from when no instruction names a user line
    (a validation pass or a metric computed wholly inside library code)."""
    file, n, chain = enclosing_at(call_site)
    loop = next((s for s, _ in reversed(chain) if isinstance(s, LOOPS) and n - 400 < s.lineno < n), None)
    if loop is None:
        return []
    end = min(loop.body[-1].end_lineno or n, loop.lineno + 399)
    counter = _counter(loop)
    out: list[str] = []
    once: list[str] = []
    for k in range(loop.lineno + 1, end + 1):
        stripped = source_line(file, k).strip()
        if stripped and not stripped.startswith(("#", "if ", "elif ")):
            if inside_periodic_if(f"{file}:{k}"):
                out.append(f"{file}:{k}")
            elif counter and _tests_counter(f"{file}:{k}", counter):
                once.append(f"{file}:{k}")  # `if step == k:` a one-time switch, cited after
    # Then flags set from the step count (`log_now = step % k == 0`, `blk.want_weights = log_now`):
    # they switch what library code does on those steps.
    flags: set[str] = set()
    sets = [a for b in loop.body for a in ast.walk(b) if isinstance(a, ast.Assign) and a.lineno <= end]
    for stmt in sorted(sets, key=lambda a: a.lineno):
        if not all(
            isinstance(t, (ast.Name, ast.Attribute, ast.Tuple, ast.expr_context))
            for t in ast.walk(stmt.targets[0])
        ):
            continue  # (an item set, `d[k] = v`, is no flag)
        # A test of the step count (`step % k == 0`), not arithmetic with it (`(step * 4) % 64`).
        periodic = _has_mod(stmt.value) and any(
            isinstance(v, ast.Compare) and isinstance(v.ops[0], (ast.Eq, ast.NotEq))
            for v in ast.walk(stmt.value)
        )
        if periodic or _words(stmt.value) & flags:
            flags |= _words(stmt.targets[0])
            out.append(f"{file}:{stmt.lineno}")
    return list(dict.fromkeys(out + once))


def _words(node: ast.AST) -> set[str]:
    """The names and attribute names of an expression (`blk`, `want_weights`)."""
    return {getattr(n, "id", None) or getattr(n, "attr", None) for n in ast.walk(node)} - {None}


def _counter(loop: ast.stmt) -> str:
    """The variable a `for` loop counts with: `step` of `for step in ...`, the second of two names
    (`for i, step in ...`, as the header reads them); "" for a `while`."""
    target = loop.target if isinstance(loop, ast.For) else None
    names = [
        t for t in (target.elts[:2] if isinstance(target, ast.Tuple) else [target]) if isinstance(t, ast.Name)
    ]
    return names[-1].id if names else ""


def _tests_counter(location: str, counter: str) -> bool:
    """`location` sits in an `if` whose condition reads the loop's counter (`if step == 3:`)."""
    # (the header's text up to its first colon, as before: `if not mask[:, c].any():` reads no
    # counter by this test, which a syntax tree's whole condition would change)
    where = enclosing_if(location)
    return bool(where) and counter in NAME.findall(source_text(where).split(":", 1)[0])
