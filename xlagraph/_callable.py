"""`xlagraph.diff(a, b)`, `xlagraph.graphs(src)`, `xlagraph.report(dir)`, `xlagraph.diverge(a, b)`
beside the engine's modules of the same names (xlagraph/diff.py, graphs.py, report/, diverge/).

Those modules stay what `import xlagraph.diff` gives, as the engine and its tests use them; each
gives itself this class as it is imported, so calling it calls the API function of its name
(`xlagraph.api.diff`, ...) whichever of the two a program reached first. `import xlagraph` pays
nothing for it.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

__all__ = ["CallableModule", "make_callable"]


class CallableModule(ModuleType):
    """A module that, called, calls `xlagraph.api.<its last name>`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        api = importlib.import_module("xlagraph.api")
        return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)


def make_callable(name: str) -> None:
    """Make module `name` callable (a module calls this on itself: `make_callable(__name__)`)."""
    sys.modules[name].__class__ = CallableModule
