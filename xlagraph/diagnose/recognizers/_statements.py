"""The user's code as statements: the `with` and `for` around a line, the names an expression
reads and a statement binds, from the `ast` of the capture's stored source text
(`diagnose.frames.source_line`), never from the analysing machine's installed packages. Where
the names a statement reads were set just before it is `_set_before`'s.

A line alone cannot say which loop it is in or which block an assignment belongs to; the syntax
tree of the whole file can (a loop header split over lines, a comprehension, an `else` branch).
A file that does not parse (another Python's syntax, a file cut short) gives nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import TypeVar

from xlagraph.diagnose.frames import source_lines, split_location

__all__ = [
    "HOST_READS",
    "MAX_SCANNED_LINES",
    "call_name",
    "called_functions",
    "calls_of",
    "calls_through_loop",
    "enclosing",
    "enclosing_at",
    "enclosing_function",
    "first_call",
    "function_around",
    "header_tests",
    "inline_test",
    "is_host_read",
    "lines_where",
    "loads",
    "method_of",
    "reads_on_host",
    "statements_where",
    "syntax_tree",
    "top_level_class",
    "top_level_function",
]

LOOPS = (ast.For, ast.AsyncFor, ast.While)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
Function = ast.FunctionDef | ast.AsyncFunctionDef
MAX_SCANNED_LINES = 20_000


def _text(file: str) -> str:
    lines = source_lines(file, MAX_SCANNED_LINES)
    return "".join(text if text.endswith("\n") else text + "\n" for _, text in lines)


@lru_cache(maxsize=32)
def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def child_blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists nested directly in `stmt` (bodies, `else`s, handlers, cases)."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body
    for case in getattr(stmt, "cases", ()):
        yield case.body


def syntax_tree(file: str) -> ast.Module | None:
    """The whole stored file as a syntax tree (None when not stored or it does not parse)."""
    return _parse(_text(file))


def top_level_function(file: str, name: str) -> ast.FunctionDef | None:
    """The file's first top-level `def name`; not an `async def`, whose call makes a coroutine:
    neither its returns nor what it stores are the value the caller gets."""
    return method_of(syntax_tree(file), name)


def top_level_class(tree: ast.Module | None, name: str) -> ast.ClassDef | None:
    """The first top-level `class name` of `tree`."""
    return next(
        (c for c in (tree.body if tree else []) if isinstance(c, ast.ClassDef) and c.name == name), None
    )


def method_of(owner: ast.ClassDef | ast.Module | None, name: str) -> ast.FunctionDef | None:
    """The first `def name` directly in a class's (or a module's) body, not an `async def`."""
    return next(
        (f for f in (owner.body if owner else []) if isinstance(f, ast.FunctionDef) and f.name == name), None
    )


def lines_where(
    files: Iterable[str], lines_of: Callable[[ast.Module], Iterable[int]], limit: int
) -> list[str]:
    """`file:line` of the first lines `lines_of` finds in the trees of `files` (file, then line
    order); a file that is not stored or does not parse gives none."""
    out: list[str] = []
    for file in dict.fromkeys(files):
        tree = syntax_tree(file)
        out += [f"{file}:{n}" for n in sorted(set(lines_of(tree)))] if tree else []
        if len(out) >= limit:
            return out[:limit]
    return out


def statements_where(files: Iterable[str], test: Callable[[ast.stmt], bool], limit: int = 3) -> list[str]:
    """`file:line` of the first statements of `files` (in file, then line order) where `test`
    holds: code only, never a docstring or a comment that says the same words."""
    return lines_where(
        files, lambda t: (n.lineno for n in ast.walk(t) if isinstance(n, ast.stmt) and test(n)), limit
    )


def calls_of(name: str, files: Iterable[str], limit: int = 3) -> list[str]:
    """`file:line` of the calls of `name` (`name(...)`, `obj.name(...)`) in `files`, at the line
    that writes the name: never its `def`, nor a docstring or string that says `name(`."""
    return lines_where(
        files,
        lambda t: (
            n.func.end_lineno or n.lineno
            for n in ast.walk(t)
            if isinstance(n, ast.Call) and call_name(n.func) == name
        ),
        limit,
    )


def calls_through_loop(name: str, files: Iterable[str], limit: int = 3) -> list[str]:
    """`file:line` of the calls of a loop's variable where the loop iterates over what names
    `name` (`for update in (update_ema, update_scale) if ema_first else (update_scale,
    update_ema): update()`): calls of the function `calls_of` cannot see by its name."""

    def lines_of(tree: ast.Module) -> Iterable[int]:
        for loop in ast.walk(tree):
            if not isinstance(loop, (ast.For, ast.AsyncFor)) or name not in loads(loop.iter):
                continue
            variables = loop_targets(loop)
            for stmt in loop.body:
                for n in ast.walk(stmt):
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in variables:
                        yield n.func.end_lineno or n.lineno

    return lines_where(files, lines_of, limit)


def enclosing(file: str, line: int) -> list[tuple[ast.stmt, list[ast.stmt]]]:
    """The statements of `file` whose lines contain `line`, outermost first, each with the block
    (statement list) it sits in: `[]` when the file is not stored or does not parse."""
    tree = _parse(_text(file)) if line > 0 else None
    if tree is None:
        return []
    chain: list[tuple[ast.stmt, list[ast.stmt]]] = []
    blocks = [tree.body]
    while blocks:
        block = blocks.pop()
        for stmt in block:
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                chain.append((stmt, block))
                blocks = list(child_blocks(stmt))
                break
    return chain


def enclosing_at(location: str) -> tuple[str, int, list[tuple[ast.stmt, list[ast.stmt]]]]:
    """The file and line of `file:line` and `enclosing`'s chain there."""
    file, line = split_location(location)
    return file, line, enclosing(file, line)


def function_around(file: str, line: int) -> Function | None:
    """The innermost `def` whose body holds line `line` of `file` (its header's first line is not
    in it): None at module level, in a string, or where the file does not parse."""
    scopes = [s for s, _ in enclosing(file, line) if isinstance(s, Function) and line > s.lineno]
    return scopes[-1] if scopes else None


def enclosing_function(file: str, line: int) -> str:
    """The name of `function_around`, "" where there is none."""
    function = function_around(file, line)
    return function.name if function else ""


def _line(source: str) -> tuple[ast.stmt | None, str]:
    """One line of source as a statement, a block's header (`if flag:`, `elif ...:`, `while`)
    given an empty body, and the text parsed; None where the line alone does not parse (part of
    a longer statement). Not cached with whole files: lines are many and would push files out."""
    code = source.strip()
    code = code[2:] if code.startswith("elif ") else code
    for text in (code, code + "\n pass"):
        try:
            return ast.parse(text).body[0], code
        except (SyntaxError, ValueError, IndexError):
            continue
    return None, code


def _named(node: ast.AST) -> set[str]:
    """The names an expression reads and the attributes it takes (`flag` of `self.flag`)."""
    return loads(node) | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def header_tests(source: str, names: set[str]) -> bool:
    """The line is an `if`, `elif` or `while` header whose condition reads one of `names`."""
    stmt, _ = _line(source)
    return isinstance(stmt, (ast.If, ast.While)) and bool(_named(stmt.test) & names)


def counts_loop(source: str, names: set[str]) -> str:
    """The line loops over one of `names`: a `for` header whose iterable reads it (`for _ in
    range(self.rounds):`, `for block in self.blocks[: depth]:`) or a comprehension's `for` (`sum(f(h, t)
    for h, t in zip(heads, targets))`): that `for` as the line writes it; "" for any other line.
    Traced, the loop unrolls: each count is other code, as each outcome of an `if`."""
    stmt, code = _line(source)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        loops: list[ast.For | ast.AsyncFor | ast.comprehension] = [stmt]
    else:
        loops = sorted(
            (n for n in ast.walk(stmt) if isinstance(n, ast.comprehension)) if stmt else (),
            key=lambda n: n.target.col_offset,
        )
    found = next((n for n in loops if _named(n.iter) & names), None)
    if found is None:
        return ""
    return f"for {ast.get_source_segment(code, found.target)} in {ast.get_source_segment(code, found.iter)}"


def inline_test(source: str, names: set[str]) -> str:
    """`... if <test> else ...`: the first conditional expression of the line whose test reads
    one of `names` (`tok = gold if teacher_forcing else pred`), as the line writes the test; ""
    where there is none (a comment or a string that says `if` is none)."""
    stmt, code = _line(source)
    tests = sorted(
        (n for n in ast.walk(stmt) if isinstance(n, ast.IfExp)) if stmt else (),
        key=lambda n: n.col_offset,
    )
    found = next((t.test for t in tests if _named(t.test) & names), None)
    return f"... if {ast.get_source_segment(code, found)} else ..." if found else ""


# Tensor methods that read the value on the host, called without arguments (`loss.item()`,
# `t.cpu()`): an implicit sync, whose value Python can then branch on.
HOST_READS = frozenset({"item", "tolist", "cpu", "numpy"})


def is_host_read(node: ast.AST) -> bool:
    """`t.item()`, `t.cpu()`, ...: a call that reads a tensor's value on the host."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in HOST_READS
        and not node.args
    )


def reads_on_host(node: ast.AST) -> bool:
    """`node` holds a host read of a tensor (`if conf.item() > t:`)."""
    return any(is_host_read(n) for n in ast.walk(node))


def call_name(func: ast.expr) -> str:
    """The name a call calls: `check` of `check(x)` and of `guard.check(x)`, else ""."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def first_call(node: ast.expr) -> ast.Call | None:
    """The call an expression makes first on a name, its attributes and items: `model.eval()` of
    `model.eval().to(d)`; None when it starts otherwise (a literal, a call of a call's result)."""
    first = None
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        first, node = (node, node.func) if isinstance(node, ast.Call) else (first, node.value)
    return first if isinstance(node, ast.Name) else None


_F = TypeVar("_F")


def called_functions(
    node: ast.AST,
    defs: Mapping[str, Sequence[_F]],
    depth: int,
    body: Callable[[_F], ast.AST],
    stop: Callable[[_F], bool] = lambda _: False,
) -> list[_F]:
    """The user's functions `node` calls by name (each definition `defs` holds of the name), then
    those they call, `depth` calls deep, each once, nearest first; a function where `stop`
    holds is not followed (it shows what is looked for itself)."""
    found: dict[int, _F] = {}
    todo = [node]
    for _ in range(depth):
        names = dict.fromkeys(call_name(n.func) for t in todo for n in ast.walk(t) if isinstance(n, ast.Call))
        reached = [d for name in names for d in defs.get(name, ()) if id(d) not in found]
        found.update((id(d), d) for d in reached)
        todo = [body(d) for d in reached if not stop(d)]
    return list(found.values())


def loads(node: ast.AST) -> set[str]:
    """The names an expression reads (comprehension variables included: they are harmless)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def stores(stmt: ast.stmt) -> set[str]:
    """The names a simple statement binds (`a = ...`, `a, b = ...`, `a += ...`, `a: T = ...`)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    else:
        return set()
    return {
        n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def is_range(node: ast.expr) -> bool:
    """`range(...)`: a loop over numbers decides no order of its own."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"


def loop_targets(loop: ast.For | ast.AsyncFor) -> set[str]:
    return {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}


def own_nodes(function: ast.AST) -> list[ast.AST]:
    """The nodes of `function`'s body, less those of functions and classes defined in it."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop(0)
        out.append(node)
        if not isinstance(node, (*SCOPES, ast.Lambda)):
            todo += list(ast.iter_child_nodes(node))
    return out


def on_self(node: ast.AST) -> bool:
    """`self.<attribute>`."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def in_docstring(location: str) -> bool:
    """`location` (`file:line`) lies in a string standing as a statement of its own (a module's,
    class's or function's docstring): prose about the code, not code (`requires_grad_(False)` said
    in a script's docstring is no switch)."""
    file, line = split_location(location)
    tree = syntax_tree(file) if file and line else None
    if tree is None:
        return False
    return any(
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and node.lineno <= line <= (node.end_lineno or node.lineno)
        for node in ast.walk(tree)
    )
