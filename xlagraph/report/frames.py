"""Python frames as the report shows them: the user's own frames first, library frames folded.

Which frame is a library frame is decided in `xlagraph.diagnose.frames`; everything else is the
user's code.
"""

from __future__ import annotations

from functools import lru_cache

from xlagraph.diagnose.frames import is_library, location
from xlagraph.ir import Frame
from xlagraph.source_paths import library_generation

__all__ = ["call_site", "is_library", "location", "split_frames", "user_frames"]


def user_frames(frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
    """The user's frames, innermost first."""
    return _user_frames(tuple(frames), library_generation())


@lru_cache(maxsize=16384)  # the ranks of a pod record the same stacks
def _user_frames(frames: tuple[Frame, ...], _generation: int) -> tuple[Frame, ...]:
    return tuple(f for f in frames if not is_library(f))


def split_frames(frames: tuple[Frame, ...]) -> tuple[tuple[Frame, ...], tuple[Frame, ...]]:
    """(user frames, library frames), each innermost first."""
    return _split_frames(tuple(frames), library_generation())


@lru_cache(maxsize=16384)
def _split_frames(frames: tuple[Frame, ...], generation: int) -> tuple[tuple[Frame, ...], tuple[Frame, ...]]:
    return _user_frames(frames, generation), tuple(f for f in frames if is_library(f))


def call_site(frames: tuple[Frame, ...]) -> str:
    """`file:line` of the innermost user frame (the innermost frame when all are library), or ``."""
    users = user_frames(frames)
    if users:
        return location(users[0])
    return location(frames[0]) if frames else ""
