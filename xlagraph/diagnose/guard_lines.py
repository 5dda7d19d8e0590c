"""Where the user decided what a dtype or grad-mode guard of torch.compile failed on (issue 37):
dynamo names no line for `tensor 'mask' dtype mismatch` nor for `GLOBAL_STATE changed: grad_mode`,
and the XLA graphs of the retrace run from the bridge's library frames. In the user's terms:

- a tensor input's dtype: the line of the caller's function that casts (or creates) the value it
  passes with the new dtype (`cache = [(x, mask.to(torch.uint8), y) ...]`), found by the names the
  call passes for that parameter and the dtype's spellings (`torch.uint8`, `.byte()`);
- the grad mode: the `with torch.no_grad()` / `set_grad_enabled(...)` / `inference_mode(...)`
  statement around the call, and the lines that assign the names its flag reads
  (`probing = epoch == 0`).

Read from the capture's stored sources; nothing is guessed where the text does not say.
"""

from __future__ import annotations

import ast
import re

from xlagraph.diagnose.frames import source_line, split_location
from xlagraph.diagnose.recognizers._statements import call_name, enclosing, function_around, syntax_tree
from xlagraph.diagnose.recognizers._value_made import assigned_before, statement
from xlagraph.diagnose.value_origin import compiled_call, parameters

__all__ = ["dtype_cast", "dtype_made", "grad_flag_lines", "grad_scope", "requires_grad_set"]

# dynamo's dtype names (`actual Byte`) -> torch's spellings of that dtype
_DTYPES = {
    "Bool": ("bool",),
    "Byte": ("uint8", "byte"),
    "Char": ("int8", "char"),
    "Short": ("int16", "short"),
    "Int": ("int32", "int"),
    "Long": ("int64", "long"),
    "Half": ("float16", "half"),
    "BFloat16": ("bfloat16",),
    "Float": ("float32", "float"),
    "Double": ("float64", "double"),
}
_GRAD_SCOPES = frozenset({"no_grad", "set_grad_enabled", "inference_mode", "enable_grad"})


def dtype_cast(subject: str, dtype: str, code: str, call_site: str) -> str:
    """`file:line` in the function that calls the compiled frame at `call_site` where the value
    passed as `subject` (the compiled function's parameter, `code` its `def`) is cast to or
    created with `dtype` (dynamo's name: `Byte`): the last such line before the call, else the
    first after it (a loop reaches it before the next call); `` when none says so."""
    spellings = _DTYPES.get(dtype, ())
    if not spellings:
        return ""
    alt = "|".join(spellings)
    return _set_at(subject, code, call_site, re.compile(rf"\btorch\.(?:{alt})\b|\.(?:{alt})\(\)"))


def dtype_made(origin: str, dtype: str) -> str:
    """Where the data behind an input made at `origin` gets `dtype` (dynamo's name: `Long`): a
    tensor made in a loader's or generator's `yield torch.from_numpy(ids)` keeps the dtype of the
    array it wraps, so the line that spells that dtype in the class (or function) around the
    yield (`.astype(np.int64)`), the one a user changes; `origin` itself when none says so, or
    more than one does (nothing is guessed)."""
    file, line = split_location(origin)
    spellings = _DTYPES.get(dtype, ())
    chain = enclosing(file, line) if file and line and spellings else []
    if not chain or not any(isinstance(n, ast.Yield) for n in ast.walk(chain[-1][0])):
        return origin  # (a tensor made in the loop itself says its dtype at its line)
    owner = next((st for st, _ in chain if isinstance(st, ast.ClassDef)), None) or function_around(file, line)
    if owner is None:
        return origin
    alt = "|".join(spellings)
    said = re.compile(rf"\b(?:torch|np|numpy)\.(?:{alt})\b|\.(?:{alt})\(\)|dtype\s*=\s*[\"'](?:{alt})[\"']")
    found = [
        n
        for n in range(owner.lineno, (owner.end_lineno or owner.lineno) + 1)
        if said.search(source_line(file, n).split("#", 1)[0])
    ]
    return f"{file}:{found[0]}" if len(found) == 1 else origin


# `x.requires_grad_(...)`, `x.requires_grad = ...`, `requires_grad=` of the call that makes it
_REQUIRES_GRAD = re.compile(r"\brequires_grad(?:_\(|\s*=)")


def requires_grad_set(subject: str, code: str, call_site: str) -> str:
    """As `dtype_cast`, for a tensor input's requires_grad: where the caller's function switches it
    on or off for the value it passes (`images.requires_grad_(True)` under `if want_saliency:`)."""
    return _set_at(subject, code, call_site, _REQUIRES_GRAD)


def _set_at(subject: str, code: str, call_site: str, said: re.Pattern[str]) -> str:
    file, line = split_location(call_site)
    if not file or not line:
        return ""
    names = _passed_names(subject, code, file, line)
    fn = function_around(file, line)
    tree = fn or syntax_tree(file)
    if tree is None:
        return ""
    body = range(fn.lineno + 1, (fn.end_lineno or fn.lineno) + 1) if fn else range(1, line + 1)
    found = [
        n
        for n in body
        if said.search(code_text := source_line(file, n).split("#", 1)[0])
        and any(re.search(rf"\b{re.escape(x)}\b", code_text) for x in names)
    ]
    before = [n for n in found if n <= line]
    at = before[-1] if before else (found[0] if found else 0)
    return f"{file}:{at}" if at else ""


def _passed_names(subject: str, code: str, file: str, line: int) -> set[str]:
    """The names the call at `file:line` passes for parameter `subject` (`mask` of
    `forecast(x.to(d), mask.to(d))`), the parameter's own name beside them: the compiled
    function's call first (`value_origin.compiled_call`), else the first call that passes it."""
    names = {subject}
    params = parameters(code)
    stmt = statement(file, line)
    if not params or stmt is None or subject not in params:
        return names
    k = params.index(subject)
    compiled = compiled_call(file, line, code)
    for call in (*([compiled] if compiled else []), *(n for n in ast.walk(stmt) if isinstance(n, ast.Call))):
        expr = next((kw.value for kw in call.keywords if kw.arg == subject), None)
        expr = expr if expr is not None else (call.args[k] if k < len(call.args) <= len(params) else None)
        if expr is not None:
            names |= {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)} - {"torch"}
            break
    return names


def grad_scope(call_site: str) -> str:
    """`file:line` of the `with torch.no_grad()` / `set_grad_enabled(...)` / `inference_mode(...)`
    that decides the grad mode of the compiled call at `call_site`: the innermost one around it;
    else (the retrace is the call outside it: `if warm: with torch.no_grad(): h = encode(x)` /
    `else: h = encode(x)`) the nearest one of its function around a call of the same callable;
    `` when none."""
    file, line = split_location(call_site)
    if not file or not line:
        return ""
    around = [s for s, _ in enclosing(file, line) if _grad_with(s)]
    if around:
        return f"{file}:{around[-1].lineno}"
    stmt = enclosing(file, line)
    called = {call_name(n.func) for n in ast.walk(stmt[-1][0]) if isinstance(n, ast.Call)} if stmt else set()
    scope = function_around(file, line) or syntax_tree(file)
    others = [
        w.lineno
        for w in (ast.walk(scope) if scope else ())
        if _grad_with(w)
        and any(isinstance(n, ast.Call) and call_name(n.func) in called for b in w.body for n in ast.walk(b))
    ]
    nearest = min(others, key=lambda n: (abs(n - line), n), default=0)
    return f"{file}:{nearest}" if nearest else ""


def _grad_with(node: ast.AST) -> bool:
    return isinstance(node, ast.With) and any(
        isinstance(i.context_expr, ast.Call) and call_name(i.context_expr.func) in _GRAD_SCOPES
        for i in node.items
    )


def grad_flag_lines(scope: str) -> tuple[str, ...]:
    """The lines that assign the names deciding the grad mode of the `with` at `scope`: those its
    flag reads (`probing = epoch == 0` for `set_grad_enabled(not probing)`) and those the test of
    the innermost `if` around it reads (`warm = epoch < 1` for `if warm: with torch.no_grad():`),
    the last assignment before it of each, in line order."""
    file, line = split_location(scope)
    chain = enclosing(file, line) if file and line else []
    stmt = chain[-1][0] if chain else None
    if not isinstance(stmt, ast.With) or stmt.lineno != line:
        return ()
    reads = [
        a
        for i in stmt.items
        if isinstance(i.context_expr, ast.Call) and call_name(i.context_expr.func) in _GRAD_SCOPES
        for a in (*i.context_expr.args, *(k.value for k in i.context_expr.keywords))
    ]
    tests = [s.test for s, _ in chain[:-1] if isinstance(s, ast.If)]
    reads += tests[-1:]
    names = sorted({n.id for a in reads for n in ast.walk(a) if isinstance(n, ast.Name)})
    found = sorted({at for name in names if (at := assigned_before(file, line, name))})
    return tuple(f"{file}:{n}" for n in found)
