"""Python frames as the report shows them: the user's own frames first, library frames folded.

A frame is a library frame when its file lies in an installed package or the standard library
(`site-packages`, `dist-packages`, `.../lib/pythonX.Y/`), inside torch / torch_xla / jax source
trees (recognised by their own subpackages, so a user folder that happens to be called `torch_xla`
is not taken for the library), or is not a real file (`<frozen ...>`, `<string>`). Everything
else is the user's code.
"""

from __future__ import annotations

import re

from xlagraph.ir import Frame

__all__ = ["call_site", "is_library", "location", "split_frames", "user_frames"]

_LIBRARY = re.compile(
    r"site-packages/|dist-packages/|/lib/python\d+(\.\d+)?/"
    r"|/torch_xla/(core|distributed|debug|utils|runtime|_internal|experimental|amp|_dynamo|_prims"
    r"|stablehlo|torch_xla\.py|runtime\.py|__init__\.py)"
    r"|/torch/(nn|optim|autograd|utils|distributed|_dynamo|_inductor|_functorch|_refs|_prims|_decomp"
    r"|fx|_tensor\.py|functional\.py|_ops\.py|__init__\.py)"
    r"|/jax/_src/|/jaxlib/"
)


def is_library(frame: Frame) -> bool:
    file = frame.file.replace("\\", "/")
    return file.startswith("<") or bool(_LIBRARY.search(file))


def user_frames(frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """The user's frames, innermost first."""
    return tuple(f for f in frames if not is_library(f))


def split_frames(frames: tuple[Frame, ...]) -> tuple[tuple[Frame, ...], tuple[Frame, ...]]:
    """(user frames, library frames), each innermost first."""
    return user_frames(frames), tuple(f for f in frames if is_library(f))


def location(frame: Frame) -> str:
    """`file:line`."""
    return f"{frame.file}:{frame.line}" if frame.line else frame.file


def call_site(frames: tuple[Frame, ...]) -> str:
    """`file:line` of the innermost user frame (the innermost frame when all are library), or ``."""
    users = user_frames(frames)
    if users:
        return location(users[0])
    return location(frames[0]) if frames else ""
