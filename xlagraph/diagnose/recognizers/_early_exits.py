"""Early exits of the user's code decided on the host: an `if` whose condition reads a value from
the device (`conf.item() > t`, a name set from one, or a line where the capture saw an implicit
sync) and that leaves a loop (`break`, `return`) or a function before code that follows it. Where
they are in the source (`exit_sites`), and which one decides the work a step runs (`exited_at`).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import NamedTuple

from xlagraph.diagnose.evidence import Evidence
from xlagraph.diagnose.frames import sources_key, split_location
from xlagraph.diagnose.recognizers._source import user_files
from xlagraph.diagnose.recognizers._statements import LOOPS, call_name, loads, reads_on_host, syntax_tree

__all__ = ["Exit", "exit_sites", "exited_at", "leaves_work", "step_syncs", "synced_lines"]


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NESTED = (*LOOPS, *_FUNCTIONS, ast.ClassDef, ast.Lambda)  # their exits leave something else


def _own(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of `body` and of the blocks nested in it, less nested loops and functions."""
    found: list[ast.stmt] = []
    todo = list(body)
    while todo:
        stmt = todo.pop(0)
        found.append(stmt)
        if not isinstance(stmt, _NESTED):
            todo += [n for n in ast.iter_child_nodes(stmt) if isinstance(n, ast.stmt)]
    return found


# Calls that make a training step: a loop or function that runs them is the training loop.
_STEP_CALLS = frozenset({"backward", "step", "mark_step", "sync", "optimizer_step", "zero_grad"})


def _trains(scope: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and call_name(n.func) in _STEP_CALLS for n in ast.walk(scope))


class Exit(NamedTuple):
    """An early exit: the `if` line, the first and last line of the loop or function it leaves,
    whether that is a loop, and the lines that read the condition's value from the device (the
    `if` itself, or `c = conf.item()` before it)."""

    line: int
    first: int
    last: int
    loop: bool
    reads: tuple[int, ...]

    @property
    def counts(self) -> bool:
        """A `while`'s own test: it decides how many times the body runs, not what one run skips."""
        return self.loop and self.line == self.first


def exit_sites(file: str, synced: frozenset[int] = frozenset()) -> tuple[Exit, ...]:
    """The early exits of `file`: each `if` whose condition reads a value from the device on the
    host (`conf.item() > t`, a name set from one in that body, or a test at one of the `synced`
    lines, where the capture saw a graph cut by an implicit sync: `h.max() > limit`) and whose
    block leaves the loop (`break`, `return`) or, outside a loop, the function (`return`) before
    code that still follows it."""
    return _exit_sites_in(file, synced, sources_key())


# Per source text: the same path in another capture (or in a diff without sources) is other text.
@lru_cache(maxsize=256)
def _exit_sites_in(file: str, synced: frozenset[int], _sources: tuple[object, ...]) -> tuple[Exit, ...]:
    tree = syntax_tree(file)
    if tree is None:
        return ()
    sites: list[Exit] = []
    outer = _outer_reads(tree)
    for scope in ast.walk(tree):
        if not isinstance(scope, (*LOOPS, *_FUNCTIONS)):
            continue
        if isinstance(scope, ast.While) and _stops_on_host(scope, synced):
            # `while seen.item() < budget:` is `if not ...: break` at its top; a loop of
            # micro-batches runs their backward, not the optimizer's step or the step's sync.
            end = scope.end_lineno or scope.lineno
            sites.append(Exit(scope.lineno, scope.lineno, end, True, (scope.lineno,)))
        if _trains(scope):
            continue  # leaving the training loop ends training: no graph loses work by it
        own = _own(scope.body)
        # A loop's exit may test a name its function read from the device before the loop
        # (`depth = int(mask.sum().item())`, then `if i >= depth: break` among the levels).
        read = {name: list(lines) for name, lines in outer.get(scope, {}).items()}
        for name, lines in _reads_in(own).items():
            read.setdefault(name, []).extend(lines)
        loop = isinstance(scope, LOOPS)
        end = scope.end_lineno or scope.lineno
        for s in own:
            if not isinstance(s, ast.If):
                continue
            host = reads_on_host(s.test) or s.test.lineno in synced
            if not (host or loads(s.test) & set(read)):
                continue
            leaves = {type(n) for n in (*s.body, *s.orelse)}
            early = loop or (s.end_lineno or 0) < end  # code after it that it skips
            if (ast.Break in leaves and loop) or (ast.Return in leaves and early):
                reads = [s.lineno] if host else []
                reads += [n for name in sorted(loads(s.test) & set(read)) for n in read[name]]
                sites.append(Exit(s.lineno, scope.lineno, end, loop, tuple(sorted(set(reads)))))
    return tuple(sorted(sites))


# What a loop that is the training loop runs; a loop that only accumulates gradients may `backward`.
_UPDATES = _STEP_CALLS - {"backward", "zero_grad"}


def _stops_on_host(loop: ast.While, synced: frozenset[int]) -> bool:
    """The `while` tests a value read from the device on the host, and is no training loop."""
    host = reads_on_host(loop.test) or loop.test.lineno in synced
    return host and not any(isinstance(n, ast.Call) and call_name(n.func) in _UPDATES for n in ast.walk(loop))


def _reads_in(statements: list[ast.stmt]) -> dict[str, list[int]]:
    """The names that `statements` assign from a value read on the host, with the lines."""
    read: dict[str, list[int]] = {}
    for s in statements:
        if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None and reads_on_host(s.value):
            for target in s.targets if isinstance(s, ast.Assign) else [s.target]:
                for t in ast.walk(target):
                    if isinstance(t, ast.Name):
                        read.setdefault(t.id, []).append(s.lineno)
    return read


def _outer_reads(tree: ast.Module) -> dict[ast.AST, dict[str, list[int]]]:
    """For each loop in a function, the names that function assigned from a host read on lines
    before the loop starts (code it runs first, in the loop's own function, not a nested one)."""
    found: dict[ast.AST, dict[str, list[int]]] = {}
    for function in ast.walk(tree):
        if not isinstance(function, _FUNCTIONS):
            continue
        statements, todo = [], list(function.body)
        while todo:
            stmt = todo.pop()
            if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
                continue  # a nested function's names are its own
            statements.append(stmt)
            todo += [n for n in ast.iter_child_nodes(stmt) if isinstance(n, ast.stmt)]
        read = _reads_in(statements)
        for stmt in statements:
            if isinstance(stmt, LOOPS):
                before = {n: [x for x in lines if x < stmt.lineno] for n, lines in read.items()}
                found[stmt] = {n: lines for n, lines in before.items() if lines}
    return found


def synced_lines(evidence: Evidence, file: str) -> frozenset[int]:
    """The lines of `file` where the capture saw an implicit sync (`Context.host_reads`)."""
    return frozenset(n for f, n in map(split_location, evidence.context.host_reads) if f == file and n)


def step_syncs(evidence: Evidence) -> list[tuple[str, int]]:
    sites = (evidence.context.call_site, evidence.context.baseline_call_site)
    return [(f, n) for f, n in map(split_location, sites) if n]


def leaves_work(file: str, site: Exit, syncs: list[tuple[str, int]], reads: bool = False) -> bool:
    """No sync of the two graphs lies in the loop or function the exit leaves (with `reads`, but
    the exit's own read of its condition: the graph cut there at each iteration): a loop that
    holds the step's own sync, like one that runs the step's calls (`_trains`), is the training
    loop: leaving it ends training, it removes no work from a graph."""
    allowed = site.reads if reads else ()
    return not any(f == file and site.first <= n <= site.last and n not in allowed for f, n in syncs)


def exited_at(evidence: Evidence) -> tuple[str, ...]:
    """The early exit in the user's code that decides which layers a step runs, then the lines
    that read its condition from the device where those are not the `if` itself (`depth =
    int(mask.sum().item())` before the loop), or (). The work's ops carry library lines only (an
    `nn.Linear` of the user's block), so the user's files are searched."""
    syncs = step_syncs(evidence)
    for file in user_files(evidence):
        for site in exit_sites(file, synced_lines(evidence, file)):
            if not site.counts and leaves_work(file, site, syncs):
                return (f"{file}:{site.line}", *(f"{file}:{n}" for n in site.reads if n != site.line))
    return ()
