"""Each statement written over several lines joined onto its first line (the others left blank,
so that lines keep their numbers), by MLIR's own rules: the reference of
rust/src/parse/stablehlo/statements.rs (see its comment), rule for rule."""

from __future__ import annotations

_CLOSER = {")": "(", "]": "[", ">": "<", "}": "{"}
_NAME = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.$-")


def _feed(line: str, stack: list[str]) -> tuple[str, bool]:
    """The line's code (before a `//` comment outside strings), its brackets fed to `stack`, and
    whether its last code character is an unmatched `{` that may open a region."""
    i, in_str, end, last_open_brace = 0, False, len(line), -1
    while i < len(line):
        c = line[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "/" and line[i + 1 : i + 2] == "/":
            end = i
            break
        elif c in "([<":
            stack.append(c)
        elif c == "{":
            stack.append(c)
            last_open_brace = len(stack)
        elif c == ">" and i > 0 and line[i - 1] == "-":
            pass
        elif c in _CLOSER:
            d = len(stack)
            while d > 0 and stack[d - 1] != _CLOSER[c] and stack[d - 1] == "<":
                d -= 1
            if d > 0 and stack[d - 1] == _CLOSER[c]:
                del stack[d - 1 :]
        i += 1
    code = line[:end].rstrip()
    value = code[:-1].rstrip().endswith("=")
    return code, not value and code.endswith("{") and len(stack) == last_open_brace and stack[-1:] == ["{"]


# White space as the core's `trim_start` reads it (Unicode's White_Space): Python's `lstrip()`
# also strips the ASCII separators \x1c-\x1f, which MLIR's lexer does not skip.
_SPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace() and c not in "\x1c\x1d\x1e\x1f")


def _attribute_entry(s: str) -> bool:
    n = 0
    while n < len(s) and s[n] in _NAME:
        n += 1
    rest = s[n:].lstrip(_SPACE)
    return n > 0 and not s[0].isdigit() and rest.startswith("=") and not rest.startswith("==")


def _continues_after(code: str, first: str) -> bool:
    return (
        (code.endswith(",") and not first.startswith("}"))
        or code.endswith("=")
        or code.endswith("->")
        or (code.endswith(":") and not first.startswith("^"))
    )


def _continues_before(nxt: str) -> bool:
    starts = nxt.startswith(("->", "attributes", "loc("))
    return starts or _attribute_entry(nxt) or nxt[:1] in set(":([<=,)]>{")


def _meaningful(s: str) -> bool:
    t = s.strip()
    return bool(t) and not t.startswith("//")


def join_statements(lines: list[str]) -> None:
    n, k = len(lines), 0
    while k < n:
        if not _meaningful(lines[k]):
            k += 1
            continue
        stack: list[str] = []
        code, brace_last = _feed(lines[k], stack)
        cur, last, joined = code, k, False
        while True:
            nxt_k = next((j for j in range(last + 1, n) if _meaningful(lines[j])), None)
            if nxt_k is None:
                break
            first = (cur if joined else lines[k]).strip()
            nxt = lines[nxt_k].strip()
            is_open = _attribute_entry(nxt) if brace_last else bool(stack)
            goes_on = _continues_after(cur.rstrip(), first) or _continues_before(nxt)
            if not (is_open or (not brace_last and goes_on)):
                break
            s = cur.rstrip()
            code, brace_last = _feed(nxt, stack)
            # the printer's spacing: none inside brackets
            glue = not (s.endswith(("(", "[", "<", "{")) or code.startswith((")", "]", ">", "}")))
            cur = s + (" " if glue else "") + code
            for j in range(last + 1, nxt_k + 1):
                lines[j] = ""
            joined, last = True, nxt_k
        if joined:
            lines[k] = cur
        k = last + 1
