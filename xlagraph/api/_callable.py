"""`xlagraph.diff(a, b)`, `xlagraph.graphs(src)`, `xlagraph.report(dir)` next to the engine's
modules of the same names (xlagraph/diff.py, graphs.py, report/).

Those modules stay what `import xlagraph.diff` gives (the engine and its tests use them); calling
one calls the API function. Done by giving the package and those modules a module class of
their own, once the API is first used (never at `import xlagraph`, which stays as cheap as it
was): the package's class sees each submodule set on it as the import system imports it.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

__all__ = ["CALLABLE", "install"]

CALLABLE = frozenset({"diff", "graphs", "report"})
PACKAGE = "xlagraph"


class _Module(ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        api = importlib.import_module(f"{PACKAGE}.api")
        return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__name__ == PACKAGE and name in CALLABLE and type(value) is ModuleType:
            value.__class__ = _Module
        super().__setattr__(name, value)


def install() -> None:
    """Give the package, and those of the three modules already imported, the class."""
    package = sys.modules.get(PACKAGE)
    if package is not None and type(package) is ModuleType:
        package.__class__ = _Module
    for name in CALLABLE:
        module = sys.modules.get(f"{PACKAGE}.{name}")
        if module is not None and type(module) is ModuleType:
            module.__class__ = _Module
            if package is not None:
                setattr(package, name, module)  # a name the API function once stood in for
