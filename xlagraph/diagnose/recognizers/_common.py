"""Helpers the recognizers share: merging raw differences into one named cause."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from xlagraph.diagnose.causes import HINTS, Cause, CauseKind
from xlagraph.diagnose.common import shape_of
from xlagraph.diagnose.evidence import Evidence, Recognized
from xlagraph.diagnose.frames import is_library, source_line
from xlagraph.ir import Frame
from xlagraph.source_paths import portable_frames, portable_path

__all__ = [
    "RESTATES",
    "assigned_from",
    "calls_of_function",
    "dict_fills",
    "downstream",
    "enclosing_function",
    "enclosing_if",
    "fold_into",
    "inside_periodic_if",
    "lines_matching",
    "merge",
    "opcodes",
    "periodic_caller",
    "periodic_in_loop",
    "renamed",
    "restated",
    "scalar_origin",
    "source_text",
    "upstream",
    "user_files",
]

_MAX_SCANNED_LINES = 20_000


def _union(items: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for group in items for x in group))


def merge(kind: CauseKind, summary: str, causes: list[Cause], hint: str = "", **kw) -> Cause:  # type: ignore[no-untyped-def]
    """One cause of `kind` that takes over the instructions, changes and lines of `causes`."""
    first = causes[0] if causes else None
    fields = {
        "left": _union(c.left for c in causes),
        "right": _union(c.right for c in causes),
        "changes": tuple(ch for c in causes for ch in c.changes),
        "mapping": tuple(m for c in causes for m in c.mapping),
        "sources": _union(c.sources for c in causes)[:6],
        "library": _union(c.library for c in causes)[:6],
        "computation": first.computation if first else "",
        "count": sum(c.count for c in causes) or 1,
    }
    fields.update(kw)
    return Cause(kind, summary, hint or HINTS[kind], **fields)


def fold_into(pending: tuple[Cause, ...], root: int, echoes: list[int], what: str) -> Recognized:
    """`pending[root]`, kind and hint kept, with `echoes` (changes that follow from it) folded in
    and said: `<its summary>; <what>`."""
    cause = pending[root]
    merged = merge(
        cause.kind, f"{cause.summary}; {what}", [cause, *(pending[j] for j in echoes)], hint=cause.hint
    )
    return Recognized((merged,), frozenset([root, *echoes]))


def renamed(cause: Cause, kind: CauseKind, summary: str, hint: str = "", **kw) -> Cause:  # type: ignore[no-untyped-def]
    return replace(cause, kind=kind, summary=summary, hint=hint or HINTS[kind], **kw)


def source_text(location: str) -> str:
    """The text of `file:line`, or `` when it cannot be read."""
    file, _, line = location.rpartition(":")
    if not file or not line.isdigit():
        return ""
    return source_line(file, int(line))


def _headers(location: str) -> Iterator[tuple[str, int, str, int]]:
    """(file, line, text, indent) of the lines that open the blocks holding `location`, innermost
    first, within 40 lines; an `else:` is followed by its `if` (at the same level)."""
    file, _, line = location.rpartition(":")
    if not file or not line.isdigit():
        return
    n = int(line)
    text = source_line(file, n)
    indent = len(text) - len(text.lstrip())
    for k in range(n - 1, max(0, n - 40), -1):
        above = source_line(file, k)
        stripped = above.strip()
        if not stripped or stripped.startswith("#"):
            continue
        level = len(above) - len(above.lstrip())
        if level < indent:
            yield file, k, stripped, level
            indent = level + 1 if stripped.startswith("else") else level


def inside_periodic_if(location: str) -> bool:
    """`file:line` sits in an `if ... % ...:` block (work done every k steps)."""
    for file, k, stripped, level in _headers(location):
        if stripped.startswith(("if ", "elif ")) and ("%" in stripped or _periodic_flag(file, k, stripped)):
            return True
        if level == 0:
            return False
    return False


def enclosing_if(location: str) -> str:
    """`file:line` of the `if`/`elif` whose block holds `location` (the nearest, within 40 lines),
    or ""; `if __name__ == ...` is the script's body, not a condition of the step."""
    for file, k, stripped, level in _headers(location):
        if stripped.startswith(("if ", "elif ")) and "__name__" not in stripped:
            return f"{file}:{k}"
        if stripped.startswith(("def ", "class ", "for ", "while ", "async ")) or level == 0:
            return ""
    return ""


def _periodic_flag(file: str, n: int, condition: str) -> bool:
    """`if want_maps:` where `want_maps = step % k == k - 1` a few lines above: a flag that holds
    the every-k-steps test."""
    names = set(re.findall(r"\b[A-Za-z_]\w*\b", condition.split(" ", 1)[-1])) - {"not", "and", "or"}
    for k in range(n - 1, max(0, n - 40), -1):
        m = re.match(r"^\s*([A-Za-z_]\w*)\s*=[^=](.*)", source_line(file, k).split("#", 1)[0])
        if m and m.group(1) in names:
            return "%" in m.group(2)
    return False


def user_files(evidence: Evidence) -> list[str]:
    """The user's source files the two graphs cite (frames and metadata of the entries, the sync
    lines), in first-seen order: where to look for a line no instruction carries, such as the
    `with torch.autocast(...)` around the code that produced the ops."""
    files: dict[str, None] = {}
    for site in (evidence.context.call_site, evidence.context.baseline_call_site):
        file = site.rpartition(":")[0]
        if file and not is_library(Frame("", file, 0)):
            files.setdefault(file)
    for canon in (evidence.left, evidence.right):
        module = canon.module
        for frames in module.stack_frames.values():
            for f in portable_frames(frames):
                if not is_library(f):
                    files.setdefault(f.file)
        for ins in module.entry.instructions:
            md = ins.metadata
            file = portable_path(md.source_file) if md is not None else ""
            if file and file not in files and not is_library(Frame("", file, 0)):
                files.setdefault(file)
    return list(files)


def lines_matching(files: Iterable[str], pattern: re.Pattern[str], limit: int = 3) -> list[str]:
    """`file:line` of the first code lines (not comments) of `files` that match `pattern`."""
    out: list[str] = []
    for file in files:
        for n in range(1, _MAX_SCANNED_LINES):
            text = source_line(file, n)
            if not text:
                break
            code = text.split("#", 1)[0]
            if pattern.search(code):
                out.append(f"{file}:{n}")
                if len(out) >= limit:
                    return out
    return out


_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)\s*\(")


def enclosing_function(file: str, n: int) -> str:
    """The name of the `def` the line `n` of `file` sits in, `` at module level."""
    text = source_line(file, n)
    indent = len(text) - len(text.lstrip())
    for k in range(n - 1, max(0, n - 400), -1):
        above = source_line(file, k)
        stripped = above.strip()
        if not stripped or stripped.startswith(("#", ")", "]", "}")):
            continue
        level = len(above) - len(above.lstrip())
        if level < indent:
            if m := _DEF.match(above):
                return m.group(1)
            indent = level
            if level == 0:
                return ""
    return ""


def calls_of_function(location: str, files: Iterable[str] = (), limit: int = 3) -> list[str]:
    """The lines (its own file first, then `files`) that call the function `location` is in."""
    file, _, line = location.rpartition(":")
    if not file or not line.isdigit():
        return []
    name = enclosing_function(file, int(line))
    if not name:
        return []
    call = re.compile(rf"\b{re.escape(name)}\s*\(")
    found: list[str] = []
    for where in dict.fromkeys([file, *files]):
        for n in range(1, _MAX_SCANNED_LINES):
            text = source_line(where, n)
            if not text:
                break
            if call.search(text.split("#", 1)[0]) and not _DEF.match(text):
                found.append(f"{where}:{n}")
                if len(found) >= limit:
                    return found
    return found


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


_LOOP = re.compile(r"^\s*(?:async\s+)?(for|while)\b")


def periodic_in_loop(call_site: str) -> list[str]:
    """The statements inside `if ... % k:` blocks of the loop around `call_site` (the step's
    sync): where work done only on some steps comes from when no instruction names a user line
    (a validation pass or a metric computed wholly inside library code)."""
    file, _, line = call_site.rpartition(":")
    if not file or not line.isdigit():
        return []
    n = int(line)
    text = source_line(file, n)
    indent = len(text) - len(text.lstrip())
    start = 0
    for k in range(n - 1, max(0, n - 400), -1):
        above = source_line(file, k)
        if not above.strip() or above.strip().startswith("#"):
            continue
        level = len(above) - len(above.lstrip())
        if level < indent:
            if _LOOP.match(above):
                start, indent = k, level
                break
            indent = level
    if not start:
        return []
    counter = re.match(r"^\s*for\s+(?:\w+\s*,\s*)?(\w+)", source_line(file, start))
    out: list[str] = []
    once: list[str] = []
    for k in range(start + 1, start + 400):
        body = source_line(file, k)
        if not body:
            break
        stripped = body.strip()
        if stripped and not stripped.startswith("#") and len(body) - len(body.lstrip()) <= indent:
            break  # the loop ended
        if stripped and not stripped.startswith(("#", "if ", "elif ")):
            if inside_periodic_if(f"{file}:{k}"):
                out.append(f"{file}:{k}")
            elif counter and _tests_counter(f"{file}:{k}", counter.group(1)):
                once.append(f"{file}:{k}")  # `if step == k:` a one-time switch, cited after
    # Then flags set from the step count (`log_now = step % k == 0`, `blk.want_weights = log_now`):
    # they switch what library code does on those steps.
    flags: set[str] = set()
    for k in range(start + 1, start + 400):
        body = source_line(file, k)
        if not body or (body.strip() and len(body) - len(body.lstrip()) <= indent):
            break
        m = _SETS.match(body.split("#", 1)[0])
        # A test of the step count (`step % k == 0`), not arithmetic with it (`(step * 4) % 64`).
        periodic = "%" in m.group(2) and re.search(r"==|!=", m.group(2)) if m else False
        if m and (periodic or set(_NAME.findall(m.group(2))) & flags):
            flags |= set(_NAME.findall(m.group(1)))
            out.append(f"{file}:{k}")
    return list(dict.fromkeys(out + once))


def _tests_counter(location: str, counter: str) -> bool:
    """`location` sits in an `if` whose condition reads the loop's counter (`if step == 3:`)."""
    where = enclosing_if(location)
    return bool(where) and counter in _NAME.findall(source_text(where).split(":", 1)[0])


_NAME = re.compile(r"\b([A-Za-z_]\w*)\b")
_MAKES_TENSOR = re.compile(r"\btensor\s*\(|\bas_tensor\s*\(|\bfull\s*\(|\bscalar_tensor\s*\(")


_TARGETS = re.compile(r"^\s*([A-Za-z_][\w\s,]*?)\s*=(?!=)(.*)")
# An assignment to names or attributes (`blk.want_weights = log_now`).
_SETS = re.compile(r"^\s*([A-Za-z_][\w\s,.]*?)\s*=(?!=)(.*)")


def assigned_from(location: str, pattern: re.Pattern[str], span: int) -> str:
    """`file:line` of an assignment within `span` lines above `location` whose targets include a
    name `location` reads and whose value matches `pattern` (`used, counts = torch.unique(...)`,
    `chunks = torch.split(h, lengths)` above the lines that use them); "" when there is none."""
    file, _, line = location.rpartition(":")
    if not file or not line.isdigit():
        return ""
    names = set(_NAME.findall(source_text(location).split("#", 1)[0]))
    for k in range(int(line) - 1, max(0, int(line) - span), -1):
        m = _TARGETS.match(source_line(file, k).split("#", 1)[0])
        if m and names & {t.strip() for t in m.group(1).split(",")} and pattern.search(m.group(2)):
            return f"{file}:{k}"
    return ""


def downstream(users: dict[str, list[str]], roots: Iterable[str]) -> set[str]:
    """Every instruction that reads `roots`, directly or not (the roots themselves excluded)."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        for u in users.get(stack.pop(), ()):
            if u not in seen:
                seen.add(u)
                stack.append(u)
    return seen


def upstream(operands: dict[str, tuple[str, ...]], roots: Iterable[str]) -> set[str]:
    """`roots` and everything they read, directly or not."""
    seen = set(roots)
    stack = list(seen)
    while stack:
        for o in operands.get(stack.pop(), ()):
            if o not in seen:
                seen.add(o)
                stack.append(o)
    return seen


def opcodes(evidence: Evidence, cause: Cause) -> set[str]:
    """The opcodes of the instructions a cause names, both graphs."""
    return {ins.opcode for _, ins in evidence.instructions(cause)}


def _assignment(file: str, n: int, names: set[str]) -> tuple[int, str] | None:
    """The nearest line above `n`, in the same function, that assigns one of `names`."""
    for k in range(n - 1, max(0, n - 200), -1):
        text = source_line(file, k)
        if _DEF.match(text):
            return None  # the function's start: the value comes from its arguments
        m = re.match(r"^\s*([A-Za-z_]\w*)\s*=[^=]", text)
        if m and m.group(1) in names:
            return k, text.split("#", 1)[0]
    return None


def scalar_origin(location: str) -> list[str]:
    """Where the tensor a line uses was made, when it is a value the user wraps in a tensor each
    step (`beta = torch.tensor(step / 3)` above `loss = ... + beta * kl`, or a helper that
    returns `torch.tensor(...)`): that line and the assignment that called it. `[]` otherwise."""
    file, _, line = location.rpartition(":")
    if not file or not line.isdigit():
        return []
    code = source_line(file, int(line)).split("#", 1)[0]
    found = _assignment(file, int(line), set(_NAME.findall(code)))
    if found is None:
        return []
    k, rhs = found
    if _MAKES_TENSOR.search(rhs.split("=", 1)[1]):
        return [f"{file}:{k}"]
    for callee in _NAME.findall(rhs.split("=", 1)[1]):
        made = _returns_tensor(file, callee)
        if made:
            return [made, f"{file}:{k}"]
    return []


def _returns_tensor(file: str, function: str) -> str:
    """`file:line` of a `return torch.tensor(...)` in the user's function of that name."""
    start = 0
    for n in range(1, _MAX_SCANNED_LINES):
        text = source_line(file, n)
        if not text:
            return ""
        if start and _DEF.match(text) and len(text) - len(text.lstrip()) <= start - 1:
            return ""
        if (m := _DEF.match(text)) and m.group(1) == function:
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
    file, _, line = location.rpartition(":")
    if not file or not line.isdigit():
        return []
    n = int(line)
    names = set(_SUBSCRIPTED.findall(source_line(file, n).split("#", 1)[0]))
    if not names:
        return []
    out: list[str] = []
    for k in range(n - 1, max(0, n - 200), -1):
        text = source_line(file, k)
        if _DEF.match(text):
            break
        code = text.split("#", 1)[0]
        if any(re.match(rf"^\s*{re.escape(name)}\s*\[[^\]]+\]\s*=[^=]", code) for name in names):
            out.append(f"{file}:{k}")
    return sorted(out, key=lambda loc: int(loc.rpartition(":")[2]))[:3]


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
    file, _, line = location.rpartition(":")
    if not file or not line.isdigit():
        return []
    n = start = int(line)
    while start > max(0, n - 200) and not _DEF.match(source_line(file, start)):
        start -= 1
    if not _DEF.match(source_line(file, start)):
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


# Ops that restate one value (another shape, type or order of the same numbers): followed through
# when asking what an instruction really reads.
RESTATES = frozenset({"transpose", "reshape", "broadcast", "convert", "bitcast", "copy"})


def restated(comp, name: str) -> str:  # type: ignore[no-untyped-def]
    """The instruction `name` restates, past transposes, reshapes, broadcasts and converts."""
    for _ in range(16):
        ins = comp.computation.by_name.get(name)
        if ins is None or ins.opcode not in RESTATES or len(comp.operands.get(name, ())) != 1:
            return name
        name = comp.operands[name][0]
    return name


def updated_inputs(comp, outputs: Iterable[str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Output -> the input of its own shape it updates (`p - lr * grad`, `buf * m + grad`), for
    the outputs that do: the inputs a training step updates are its weights and state."""
    found = {}
    for o in outputs:
        shape = shape_of(comp, o)
        near = list(comp.operands.get(restated(comp, o), ()))
        # One arithmetic op deeper: AdamW's decay `p * (1 - lr * wd)` before the step, Adam's
        # `v * beta2 + (1 - beta2) * g * g`.
        near += [
            y
            for x in near
            if comp.computation.by_name.get(restated(comp, x)) is not None
            and comp.computation.by_name[restated(comp, x)].opcode in _ARITHMETIC
            for y in comp.operands.get(restated(comp, x), ())
        ]
        for x in near:
            p = restated(comp, x)
            if p in comp.param_number and shape_of(comp, p) == shape:
                found[o] = p
                break
    return found


_ARITHMETIC = frozenset({"multiply", "add", "subtract", "divide"})


def rewired(evidence: Evidence, cause: Cause) -> bool:
    """Every instruction of the region is matched to one of the same opcode and shape whose
    operands differ only by parameters (each side's operand is an input)."""
    left, right = evidence.left.entry, evidence.right.entry
    match = evidence.entry_match
    if not cause.right or len(cause.left) != len(cause.right):
        return False
    for b in cause.right:
        a = match.get(b)
        if a is None or a not in cause.left or b not in right.operands or a not in left.operands:
            return False
        ia, ib = left.instruction(a), right.instruction(b)
        if ia.opcode != ib.opcode or ia.shape != ib.shape:
            return False
        oa, ob = left.operands[a], right.operands[b]
        if len(oa) != len(ob):
            return False
        for x, y in zip(oa, ob, strict=True):
            if match.get(y) != x and not (x in left.param_number and y in right.param_number):
                return False
    return True


def added_part(cause: Cause, keep: Callable[[str], bool]) -> Cause | None:
    """The part of an added-inputs cause about the inputs `keep` accepts, or None."""
    names = tuple(n for n in cause.right if keep(n))
    if not names:
        return None
    if len(names) == len(cause.right):
        return cause
    changes = tuple(ch for ch in cause.changes if keep(ch.right))
    listed = ", ".join(f"input {ch.new}" for ch in changes if ch.new)
    return replace(
        cause, right=names, changes=changes, summary=f"B takes {len(names)} input(s) more ({listed})"
    )
