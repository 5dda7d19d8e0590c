"""Which Python frames are the user's: the line a cause cites is the first frame of user code.

A frame is a library frame when its file lies in an installed package or the standard library
(`site-packages`, `dist-packages`, `.../lib/pythonX.Y/`), inside torch / torch_xla / transformers /
jax source trees (recognised by their own subpackages, so a user folder that happens to be called
`torch_xla` is not taken for the library), or is not a real file (`<frozen ...>`, `<string>`).
"""

from __future__ import annotations

import linecache
import os
import re
import stat
from functools import lru_cache

from xlagraph.ir import Frame

__all__ = ["first_user_frame", "is_library", "location", "source_line"]

# A source file larger than this is no Python source a user wrote: it is not read.
_MAX_SOURCE_BYTES = 16 << 20

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


@lru_cache(maxsize=4096)
def _readable(file: str) -> bool:
    """A regular file of sane size: a dump's metadata may name a FIFO, a device or anything else,
    which `linecache` would block on or read without end."""
    try:
        st = os.stat(file)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= _MAX_SOURCE_BYTES


def source_line(file: str, line: int) -> str:
    """Line `line` of the source file `file` named by a frame, `` when it cannot be read safely."""
    if line <= 0 or not file or not _readable(file):
        return ""
    return linecache.getline(file, line)
