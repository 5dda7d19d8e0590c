"""Capture what a PyTorch/XLA training run compiles and executes, step by step.

    XLAGRAPH_CAPTURE=DIR python train.py          # no code change (the installed .pth hook)
    with xlagraph.capture.capture(DIR): ...       # from Python
    runs = xlagraph.capture.read_capture(DIR)     # one RunLog per process

Importing this package does not import torch: the hook imports nothing until torch_xla is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["capture", "read_capture"]

if TYPE_CHECKING:
    from xlagraph.capture._hook import capture
    from xlagraph.capture.reader import read_capture


def __getattr__(name: str) -> Any:
    if name == "capture":
        from xlagraph.capture._hook import capture

        return capture
    if name == "read_capture":
        from xlagraph.capture.reader import read_capture

        return read_capture
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
