"""xlagraph: why did my PyTorch/XLA step recompile? `xlagraph.capture(DIR)` records a run;
`load`, `diff`, `report`, `check`, ... are the library (xlagraph.api, docs/api.md)."""

from __future__ import annotations

__all__ = ["Check", "Computation", "Diff", "Divergence", "Event", "Graphs", "InputError", "Instruction",
           "Module", "ParseError", "Ranks", "Report", "XlagraphError", "capture", "check", "diff", "diverge",
           "graphs", "load", "load_all", "ranks", "report", "watch"]  # fmt: skip


def __getattr__(name: str) -> object:  # typed by __init__.pyi; no `typing` import at start-up
    # Lazy, so `import xlagraph` (and the start-up hook) never pulls in torch or the engine.
    # __init__.pyi types these names. `xlagraph.diff`, `.graphs`, `.report` and `.diverge` are also modules
    # of the engine, callable (xlagraph/_callable.py).
    if name == "capture":
        from xlagraph.capture._hook import capture

        return capture
    if name in __all__:
        from xlagraph import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
