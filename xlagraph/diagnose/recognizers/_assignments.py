"""Where a value a line reads was made: the assignment above it, the `torch.tensor(...)` that
wrapped a Python number, the lines that fill a dict read by key or reorder a sequence."""

from __future__ import annotations

import re

from xlagraph.diagnose.frames import source_line, source_lines, split_location
from xlagraph.diagnose.recognizers._source import DEF, MAX_SCANNED_LINES, NAME, source_text

__all__ = ["assigned_from", "assigned_in_function", "dict_fills", "reorderings", "scalar_origin"]


_TARGETS = re.compile(r"^\s*([A-Za-z_][\w\s,]*?)\s*=(?!=)(.*)")


def assigned_from(location: str, pattern: re.Pattern[str], span: int) -> str:
    """`file:line` of an assignment within `span` lines above `location` whose targets include a
    name `location` reads and whose value matches `pattern` (`used, counts = torch.unique(...)`,
    `chunks = torch.split(h, lengths)` above the lines that use them); "" when there is none."""
    file, line = split_location(location)
    if not file or not line:
        return ""
    names = set(NAME.findall(source_text(location).split("#", 1)[0]))
    for k in range(line - 1, max(0, line - span), -1):
        m = _TARGETS.match(source_line(file, k).split("#", 1)[0])
        if m and names & {t.strip() for t in m.group(1).split(",")} and pattern.search(m.group(2)):
            return f"{file}:{k}"
    return ""


def assigned_in_function(location: str, pattern: re.Pattern[str]) -> str:
    """`file:line` of an assignment anywhere in the function around `location` (above it, or
    below it in a loop that carries the value into the next step: `weights = ...` at the end of
    an epoch) whose targets include a name `location` reads and whose value matches `pattern`;
    "" when there is none."""
    file, n = split_location(location)
    if not file or not n:
        return ""
    names = set(NAME.findall(source_text(location).split("#", 1)[0]))
    start = n
    while start > max(1, n - 300) and not DEF.match(source_line(file, start)):
        start -= 1
    text = source_line(file, start)
    depth = len(text) - len(text.lstrip()) if DEF.match(text) else -1
    for k in range(start + 1, start + 400):
        text = source_line(file, k)
        if text.strip() and depth >= 0 and len(text) - len(text.lstrip()) <= depth:
            break  # the function ended
        m = _TARGETS.match(text.split("#", 1)[0])
        if m and k != n and names & {t.strip() for t in m.group(1).split(",")} and pattern.search(m.group(2)):
            return f"{file}:{k}"
    return ""


def _assignment(file: str, n: int, names: set[str]) -> tuple[int, str] | None:
    """The nearest line above `n`, in the same function, that assigns one of `names`."""
    for k in range(n - 1, max(0, n - 200), -1):
        text = source_line(file, k)
        if DEF.match(text):
            return None  # the function's start: the value comes from its arguments
        m = re.match(r"^\s*([A-Za-z_]\w*)\s*=[^=]", text)
        if m and m.group(1) in names:
            return k, text.split("#", 1)[0]
    return None


_MAKES_TENSOR = re.compile(r"\btensor\s*\(|\bas_tensor\s*\(|\bfull\s*\(|\bscalar_tensor\s*\(")


def scalar_origin(location: str) -> list[str]:
    """Where the tensor a line uses was made, when it is a value the user wraps in a tensor each
    step (`beta = torch.tensor(step / 3)` above `loss = ... + beta * kl`, or a helper that
    returns `torch.tensor(...)`): that line and the assignment that called it. `[]` otherwise."""
    file, line = split_location(location)
    if not file or not line:
        return []
    code = source_line(file, line).split("#", 1)[0]
    found = _assignment(file, line, set(NAME.findall(code)))
    if found is None:
        return []
    k, rhs = found
    if _MAKES_TENSOR.search(rhs.split("=", 1)[1]):
        return [f"{file}:{k}"]
    for callee in NAME.findall(rhs.split("=", 1)[1]):
        made = _returns_tensor(file, callee)
        if made:
            return [made, f"{file}:{k}"]
    return []


def _returns_tensor(file: str, function: str) -> str:
    """`file:line` of a `return torch.tensor(...)` in the user's function of that name."""
    start = 0
    for n, text in source_lines(file, MAX_SCANNED_LINES):
        if start and DEF.match(text) and len(text) - len(text.lstrip()) <= start - 1:
            return ""
        if (m := DEF.match(text)) and m.group(1) == function:
            start = len(text) - len(text.lstrip()) + 1
            continue
        if start and text.strip().startswith("return") and _MAKES_TENSOR.search(text.split("#", 1)[0]):
            return f"{file}:{n}"
    return ""


_SUBSCRIPTED = re.compile(r"\b([A-Za-z_]\w*)\s*\[")


def dict_fills(location: str) -> list[str]:
    """The lines of the same function that fill a container the line at `location` reads by key
    (`losses[task] = ...` for `total = losses["a"] + losses["b"]`): where the order of a dict of
    statistics is decided. `[]` when there are none."""
    file, n = split_location(location)
    if not file or not n:
        return []
    names = set(_SUBSCRIPTED.findall(source_line(file, n).split("#", 1)[0]))
    if not names:
        return []
    out: list[str] = []
    for k in range(n - 1, max(0, n - 200), -1):
        text = source_line(file, k)
        if DEF.match(text):
            break
        code = text.split("#", 1)[0]
        if any(re.match(rf"^\s*{re.escape(name)}\s*\[[^\]]+\]\s*=[^=]", code) for name in names):
            out.append(f"{file}:{k}")
    return sorted(out, key=lambda loc: split_location(loc)[1])[:3]


# Statements that change an order: shuffles, reversals, sorts by a key (a value that may change),
# rotations (`x = x[1:] + x[:1]`).
_REORDERS = re.compile(
    r"\bshuffle\(|\.reverse\(\)|\[::-1\]|\breversed\(|\bsorted\(.*\bkey\s*=|\.sort\(.*\bkey\s*=|\brandperm\(|"
    r"\bpermutation\(|\brotate\(|^\s*(\w+)\s*=\s*\1\s*\[[^\]]*:[^\]]*\]\s*\+"
)


def reorderings(location: str) -> list[str]:
    """Lines of the function around `location` (it and its loop) that reorder a sequence: where
    an order that differs from step to step is decided (a task list rotated each step). Scans
    from the `def` above to the end of that function."""
    file, n = split_location(location)
    if not file or not n:
        return []
    start = n
    while start > max(0, n - 200) and not DEF.match(source_line(file, start)):
        start -= 1
    if not DEF.match(source_line(file, start)):
        return []
    out: list[str] = []
    for k in range(start + 1, start + 400):
        text = source_line(file, k)
        if text.strip() and not text[0].isspace():
            break  # the next top-level statement: the function ended
        code = text.split("#", 1)[0]
        if _REORDERS.search(code):
            out.append(f"{file}:{k}")
    return out[:3]
