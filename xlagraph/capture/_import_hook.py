"""Run code right after a module's import has finished, without importing it first: the spec the
other finders give, with its loader's `exec_module` wrapped once. Shared by the recorder's hook
(torch_xla, its SPMD module) and the fingerprints' (torch)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import suppress
from typing import Any

__all__ = ["AfterImport", "spec_then"]


def spec_then(name: str, path: Any, target: Any, after: Callable[[Any], None]) -> Any:
    """`name`'s spec from the finders on `sys.meta_path`, its loader calling `after(module)` once
    the module has executed (then back to the loader's own method). The caller removes its own
    finder from `sys.meta_path` first; `after` must not raise."""
    spec = None
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is not None and (spec := find(name, path, target)) is not None:
            break
    loader = getattr(spec, "loader", None)
    if loader is None or not hasattr(loader, "exec_module"):
        return spec
    exec_module = loader.exec_module

    def exec_then_hook(module: Any) -> None:
        exec_module(module)
        with suppress(AttributeError):
            del loader.exec_module  # back to the class's method
        after(module)

    loader.exec_module = exec_then_hook
    return spec


class AfterImport:
    """A finder for `sys.meta_path` that runs `after(module)` once `name` has been imported, then
    takes itself off the path (its owner takes it off when it stops first)."""

    def __init__(self, name: str, after: Callable[[Any], None]) -> None:
        self.name = name
        self.after = after

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.name:
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        return spec_then(name, path, target, self.after)
