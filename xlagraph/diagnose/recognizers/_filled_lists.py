"""Tensors made from Python lists that a loop fills until a condition stops it (`while not done:
states.append(state)`: an episode, a generated sequence, a search): the loop decides their length,
so every tensor made from those lists changes length together, each new length a graph of its
own. The statements that make them are where to pad, the loop is what decides the length."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from xlagraph.diagnose.frames import source_line, split_location
from xlagraph.diagnose.recognizers._host_numbers import definitions
from xlagraph.diagnose.recognizers._statements import LOOPS, Function, call_name, enclosing, syntax_tree

__all__ = ["filled_until"]

# A tensor (or the array it is made from) built from a Python sequence.
_BUILDS = re.compile(r"\b(?:torch\.(?:tensor|as_tensor|stack)|np\.(?:array|asarray|stack))\s*\(")


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _builds(file: str, stmt: ast.stmt) -> bool:
    end = stmt.end_lineno or stmt.lineno
    return any(_BUILDS.search(source_line(file, n).split("#", 1)[0]) for n in range(stmt.lineno, end + 1))


def _open_loops(scope: ast.AST) -> list[tuple[ast.stmt, set[str]]]:
    """The loops of `scope` that end on a condition (a `while`, or a `for` with a `break`), each
    with the names of the lists it appends to."""
    found = []
    for loop in ast.walk(scope):
        if not isinstance(loop, LOOPS):
            continue
        if not isinstance(loop, ast.While) and not any(isinstance(n, ast.Break) for n in ast.walk(loop)):
            continue
        lists = {
            n.func.value.id
            for n in ast.walk(loop)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "append"
            and isinstance(n.func.value, ast.Name)
        }
        if lists:
            found.append((loop, lists))
    return found


def _filling_loop(
    file: str, chain: list[tuple[ast.stmt, list[ast.stmt]]], files: Iterable[str]
) -> tuple[str, set[str]] | None:
    """`file:line` of the loop that fills the lists the last statement of `chain` reads, and the
    names in this block that hold such lists: filled in this function before the statement, or
    returned by a function of the user's called above it (`states, actions = run_episode(env)`)."""
    stmt, block = chain[-1]
    read = _names(stmt.value) if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value else set()
    # (a script's top level where no function holds it)
    scope = next((s for s, _ in reversed(chain) if isinstance(s, Function)), None) or syntax_tree(file)
    for loop, lists in _open_loops(scope) if scope is not None else ():
        # (at the top level, a loop of the top level's own, not one inside a function there)
        top = isinstance(scope, ast.Module)
        if top and any(isinstance(s, Function) for s, _ in enclosing(file, loop.lineno)):
            continue
        if (loop.end_lineno or loop.lineno) < stmt.lineno and lists & read:
            return f"{file}:{loop.lineno}", lists
    defs = definitions([file, *files])
    for above in block[: block.index(stmt)]:
        if not (isinstance(above, ast.Assign) and isinstance(above.value, ast.Call)):
            continue
        targets = {n.id for t in above.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        called = defs.get(call_name(above.value.func))
        if not targets & read or called is None:
            continue
        returned = {n for r in ast.walk(called[1]) if isinstance(r, ast.Return) for n in _names(r)}
        loop_of = next((loop for loop, lists in _open_loops(called[1]) if lists & returned), None)
        if loop_of is not None:
            return f"{called[0]}:{loop_of.lineno}", targets
    return None


def filled_until(location: str, files: Iterable[str] = ()) -> tuple[str, ...]:
    """For a statement that makes a tensor from lists such a loop fills: the statements of its
    block that make tensors from those lists (it among them), in order, then the loop's header;
    () otherwise."""
    file, line = split_location(location)
    chain = enclosing(file, line) if file and line else []
    if not chain or not _builds(file, chain[-1][0]):
        return ()
    found = _filling_loop(file, chain, files)
    if found is None:
        return ()
    loop, lists = found
    block = chain[-1][1]
    made = [f"{file}:{s.lineno}" for s in block if _builds(file, s) and _names(s) & lists]
    return (*made, loop)
