"""Numbers as HLO prints them: the same number printed two ways, and numbers that follow a changed
input dimension (equal, in proportion, or its reciprocal).
"""

from __future__ import annotations

import re

_INT = re.compile(r"\d+")


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def payload(change_text: str) -> str:
    """The value of a scalar constant as a change prints it: `s64[] 3` -> `3`."""
    return change_text.rsplit(" ", 1)[-1]


def numbers_equal(a: str, b: str) -> bool:
    """The same number printed two ways (`1` and `1.0`). Integers compare as integers: a float
    holds 53 bits, and u64/s64 constants past 2^53 that differ would compare equal."""
    if not (is_number(a) and is_number(b)):
        return False
    try:
        return int(a) == int(b)
    except ValueError:
        return float(a) == float(b)


def dim_changes(old: str, new: str) -> set[tuple[str, str]]:
    """`f32[4,8]` -> `f32[2,8]` gives {("4", "2")}: constants equal to a changed dimension follow it."""
    a = _INT.findall(old.split("[", 1)[-1])
    b = _INT.findall(new.split("[", 1)[-1])
    return {(x, y) for x, y in zip(a, b, strict=False) if x != y}


def explained_by_dims(old: str, new: str, dims: set[tuple[str, str]]) -> bool:
    """Every number that differs between `old` and `new` follows a changed input dimension:
    equal to it (4 -> 3) or in proportion to it (32 -> 24 when 4 -> 3)."""
    if not dims:
        return False
    a, b = _INT.findall(old), _INT.findall(new)
    if len(a) != len(b):
        return False
    ratios = [(int(x), int(y)) for x, y in dims]
    changed = [(int(x), int(y)) for x, y in zip(a, b, strict=True) if x != y]
    return bool(changed) and all(any(x * q == y * p for p, q in ratios) for x, y in changed)


def reciprocal_dims(old: str, new: str, dims: set[tuple[str, str]]) -> bool:
    """A scaling constant that follows a changed dimension: 1/4 -> 1/3 when 4 -> 3."""
    if not (is_number(old) and is_number(new)) or not dims:
        return False
    o, n = float(old), float(new)
    for x, y in dims:
        fx, fy = float(x), float(y)
        if fx and fy and abs(o * fx - n * fy) < 1e-6 * max(abs(o * fx), 1.0):
            return True
    return False
