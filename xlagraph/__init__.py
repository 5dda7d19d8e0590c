"""xlagraph: why did my PyTorch/XLA step recompile? `xlagraph.capture(DIR)` records a run."""

from __future__ import annotations

from typing import Any

__all__ = ["capture"]


def __getattr__(name: str) -> Any:
    # Lazy, so `import xlagraph` (and the start-up hook) never pulls in torch or the engine.
    if name == "capture":
        from xlagraph.capture._hook import capture

        return capture
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
