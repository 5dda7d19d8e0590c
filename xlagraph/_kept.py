"""Answers kept per object: a report diffs each graph with several others, and every diff asks
the same questions of the same canonical computations and modules (never modified once made)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TypeVar
from weakref import WeakKeyDictionary

__all__ = ["kept_while_alive"]

K = TypeVar("K")
V = TypeVar("V")


def kept_while_alive(fn: Callable[[K], V]) -> Callable[[K], V]:
    """`fn` of one argument, its answer for each argument computed once and kept while that
    argument lives. Callers share the answer: never modify it."""
    kept: WeakKeyDictionary[K, V] = WeakKeyDictionary()

    @wraps(fn)
    def once(key: K) -> V:
        found = kept.get(key)
        if found is None:
            found = kept[key] = fn(key)
        return found

    return once
