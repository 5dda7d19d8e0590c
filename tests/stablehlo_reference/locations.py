"""MLIR locations -> the HLO metadata JAX's own export writes: `op_name` from the outermost
name (`"jit(f)/dot_general"(...)`), `source_file`/`source_line` from the first file location
found callee first (`callsite(callee at caller)`: the user's frame is the callee), through the
`#locN = loc(...)` alias table the printer writes after the module (`as_text(debug_info=True)`).
"""

from __future__ import annotations

import re

__all__ = ["Locations"]

_FILE = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):\d+')
_NAME = re.compile(r'^"((?:[^"\\]|\\.)*)"\s*(?:\((.*)\))?$', re.S)
_CALLSITE = re.compile(r"^callsite\((.*)\s+at\s+(.*)\)$", re.S)
_PRETTY_FILE = re.compile(r"^([^\s\"()#\[]+):(\d+):\d+$")  # the pretty form: no quotes
_PRETTY_CALLSITE = re.compile(r"^(\S+)\s+at\s+(.*)$", re.S)
_ALIAS = re.compile(r"#loc\d*")
_DEPTH = 64  # alias chains are short; a cycle must not loop


class Locations:
    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self._cache: dict[str, tuple[str, str, int]] = {}

    def resolve(self, loc: str) -> tuple[str, str, int]:
        """(op_name, source_file, source_line) of `loc(...)`; empty where it has none."""
        if not loc:
            return "", "", 0
        got = self._cache.get(loc)
        if got is None:
            got = self._walk(loc, 0)
            self._cache[loc] = got
        return got

    def _walk(self, loc: str, depth: int) -> tuple[str, str, int]:
        s = loc.strip()
        if depth > _DEPTH:
            return "", "", 0
        if s.startswith("loc(") and s.endswith(")"):
            s = s[4:-1].strip()
        if _ALIAS.fullmatch(s):
            target = self.aliases.get(s)
            return self._walk(target, depth + 1) if target else ("", "", 0)
        if m := _FILE.match(s):
            return "", _unescape(m.group(1)), int(m.group(2))
        if m := _PRETTY_FILE.match(s):
            return "", m.group(1), int(m.group(2))
        if (m := _CALLSITE.match(s)) or (not s.startswith('"') and (m := _PRETTY_CALLSITE.match(s))):
            _, f, ln = self._walk(m.group(1), depth + 1)
            if not f:
                _, f, ln = self._walk(m.group(2), depth + 1)
            return "", f, ln
        if m := _NAME.match(s):
            name = _unescape(m.group(1))
            if m.group(2) is None:
                return name, "", 0
            inner, f, ln = self._walk(m.group(2), depth + 1)
            return name or inner, f, ln
        if s.startswith("fused"):
            start = s.find("[")
            for part in s[start + 1 : s.rfind("]")].split(", ") if start >= 0 else []:
                name, f, ln = self._walk(part, depth + 1)
                if f:
                    return name, f, ln
        return "", "", 0


def _unescape(s: str) -> str:
    return s.replace('\\"', '"').replace("\\\\", "\\") if "\\" in s else s
