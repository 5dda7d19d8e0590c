"""Transformations of StableHLO TEXT (MLIR) whose effect on a diff is exact by construction: the
MLIR counterparts of transforms.py's rename, reorder and permute_params (issue 38).

Like transforms.py, independent of xlagraph: the text is cut with a small reader of its own that
knows only what JAX's printer writes (`%name = op ...`, regions closed on lines of their own,
the entry `@main` first), so a bug in xlagraph's StableHLO reader cannot hide in both.

- `rename`: every SSA value (`%0`, `%arg1`, `%cst_2`, `%iterArg`) and every private function
  (`@closed_call`) gets a fresh name: the same program, `identical`.
- `reorder`: the entry's top-level operations in another order that respects what each reads
  (an operation with regions moves whole): `identical`.
- `permute_args`: the entry's arguments (each with its name, type and attributes) in another
  order: a `parameter_permutation` with exactly that mapping.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from tests.metamorphic.transforms import NotApplicable

__all__ = ["TEXT_TRANSFORMS", "Main", "permute_args", "rename", "reorder"]

_VALUE = re.compile(r"%([A-Za-z_$.][\w$.\-]*|\d+)")
_PRIVATE = re.compile(r"func\.func private @([\w$.\-]+)")
_DEFINES = re.compile(r"^\s*((?:%[\w$.\-]+(?::\d+)?\s*,\s*)*%[\w$.\-]+(?::\d+)?)\s*=")


def _split_top(text: str) -> list[str]:
    """`text` cut at the commas outside brackets, braces, parentheses, angles and strings."""
    out, depth, cur, quoted = [], 0, [], False
    for c in text:
        if c == '"':
            quoted = not quoted
        elif not quoted and c in "([{<":
            depth += 1
        elif not quoted and c in ")]}>" and not (c == ">" and cur and cur[-1] == "-"):
            depth -= 1
        if c == "," and depth == 0 and not quoted:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _braces(line: str) -> int:
    """Net `{` minus `}` of a line, outside strings."""
    net, quoted = 0, False
    for c in line:
        if c == '"':
            quoted = not quoted
        elif not quoted:
            net += (c == "{") - (c == "}")
    return net


@dataclass
class Main:
    """The text around the entry function's body, and the body's top-level operations (each
    its lines: an operation with regions spans several)."""

    before: list[str]
    header: str
    ops: list[list[str]]
    after: list[str]

    @classmethod
    def parse(cls, text: str) -> Main:
        lines = text.split("\n")
        start = next((k for k, ln in enumerate(lines) if "func.func public @main(" in ln), None)
        if start is None or not lines[start].rstrip().endswith("{"):
            raise NotApplicable("no public @main on one line")
        ops: list[list[str]] = []
        k, depth = start + 1, 0
        while k < len(lines):
            ln = lines[k]
            if depth == 0 and ln.strip() == "}":
                break
            # An operation starts with its results, its name or `return`; a `while`'s `cond {`
            # line (at the operation's own indent) continues it.
            if depth == 0 and (
                ln.lstrip().startswith(("%", '"', "return", "func.", "stablehlo.")) or not ops
            ):
                ops.append([ln])
            else:
                ops[-1].append(ln)
            depth += _braces(ln)
            k += 1
        else:
            raise NotApplicable("@main not closed")
        if not ops or not ops[-1][0].strip().startswith(("return", "func.return")):
            raise NotApplicable("@main does not end in its return")
        return cls(lines[:start], lines[start], ops, lines[k:])

    def text(self) -> str:
        return "\n".join([*self.before, self.header, *(ln for op in self.ops for ln in op), *self.after])

    def args(self) -> tuple[str, list[str], str]:
        """The header cut around its argument list: (head, arguments, tail)."""
        head, rest = self.header.split("@main(", 1)
        depth = 1
        for k, c in enumerate(rest):
            depth += (c == "(") - (c == ")")
            if depth == 0:
                return head + "@main(", _split_top(rest[:k]), rest[k:]
        raise NotApplicable("unbalanced @main arguments")


def rename(text: str, rng: random.Random) -> str:
    names = sorted(set(_VALUE.findall(text)))
    fresh = [f"v{k}_{rng.randrange(10**6)}" for k in range(len(names))]
    rng.shuffle(fresh)
    new = dict(zip(names, fresh, strict=True))
    text = _VALUE.sub(lambda m: "%" + new[m.group(1)], text)
    funcs = _PRIVATE.findall(text)
    for f in funcs:
        text = re.sub(rf"@{re.escape(f)}\b(?=[(\s])", f"@fn_{rng.randrange(10**6)}_{f[::-1]}", text)
    return text


def _defined(op: list[str]) -> set[str]:
    m = _DEFINES.match(op[0])
    if not m:
        return set()
    return {d.strip().split(":")[0].lstrip("%") for d in m.group(1).split(",")}


def reorder(text: str, rng: random.Random) -> str:
    main = Main.parse(text)
    body, ret = main.ops[:-1], main.ops[-1]
    owner = {name: k for k, op in enumerate(body) for name in _defined(op)}
    deps = {
        k: {owner[v] for ln in op for v in _VALUE.findall(ln) if v in owner and owner[v] != k}
        for k, op in enumerate(body)
    }
    for _ in range(8):
        order: list[int] = []
        placed: set[int] = set()
        ready = [k for k, d in deps.items() if not d]
        while ready:
            k = ready.pop(rng.randrange(len(ready)))
            order.append(k)
            placed.add(k)
            ready += [u for u, d in deps.items() if u not in placed and u not in ready and d <= placed]
        if len(order) != len(body):
            raise NotApplicable("a cycle: an operation this reader cut wrongly")
        if order != sorted(order):
            main.ops = [*(body[k] for k in order), ret]
            return main.text()
    raise NotApplicable("one order only")


def permute_args(text: str, perm: dict[int, int]) -> str:
    """Argument `a` of @main moved to position `perm[a]` (the others keep theirs)."""
    main = Main.parse(text)
    head, args, tail = main.args()
    out = list(args)
    for a, b in perm.items():
        out[b] = args[a]
    main.header = head + ", ".join(out) + tail
    return main.text()


TEXT_TRANSFORMS = ("rename", "reorder", "permute_args")
