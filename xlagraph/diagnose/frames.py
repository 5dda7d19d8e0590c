"""Which Python frames are the user's: the line a cause cites is the first frame of user code.

A frame is a library frame when its file lies in an installed package or the standard library
(`site-packages`, `dist-packages`, `.../lib/pythonX.Y/`), inside torch / torch_xla / transformers /
jax source trees (recognised by their own subpackages, so a user folder that happens to be called
`torch_xla` is not taken for the library), or is not a real file (`<frozen ...>`, `<string>`).
"""

from __future__ import annotations

import re

from xlagraph.ir import Frame

__all__ = ["first_user_frame", "is_library", "location"]

_LIBRARY = re.compile(
    r"site-packages/|dist-packages/|/lib/python\d+(\.\d+)?/"
    r"|/torch_xla/(core|distributed|debug|utils|runtime|_internal|experimental|amp|_dynamo|_prims"
    r"|stablehlo|torch_xla\.py|runtime\.py|__init__\.py)"
    r"|/torch/(nn|optim|autograd|utils|distributed|_dynamo|_inductor|_functorch|_refs|_prims|_decomp"
    r"|fx|amp|_tensor\.py|functional\.py|_ops\.py|__init__\.py)"
    r"|/transformers/(models|modeling_|generation|pytorch_utils|activations)"
    r"|/jax/_src/|/jaxlib/"
)


def is_library(frame: Frame) -> bool:
    file = frame.file.replace("\\", "/")
    return file.startswith("<") or bool(_LIBRARY.search(file))


def location(frame: Frame) -> str:
    """`file:line`."""
    return f"{frame.file}:{frame.line}" if frame.line else frame.file


def first_user_frame(frames: tuple[Frame, ...]) -> tuple[Frame | None, Frame | None]:
    """(the innermost user frame, the library frame it called into), innermost first.

    `clip_grad_norm_` called from `train.py:40`: (train.py:40, clip_grad.py:...). A stack of
    library frames only gives (None, its innermost frame).
    """
    library: Frame | None = None
    for f in frames:
        if is_library(f):
            library = f if library is None else library
            continue
        return f, library
    return None, library
