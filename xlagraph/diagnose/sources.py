"""The lines a cause cites, from the dumps' metadata: the user's own line first.

Each instruction's frames are walked past library code (torch, torch_xla, transformers, any
installed package) to the first user frame; the library frame it called into is kept beside it.
Dumps that record only the innermost frame (`source_file`/`source_line`) often point into
library code; the instructions right next to the cause are then tried, and else the library
lines are all there is (the capture's sync frames give the user's line in a report).
"""

from __future__ import annotations

from collections.abc import Iterable

from xlagraph.canonical import CanonicalComputation, CanonicalModule
from xlagraph.diagnose.frames import first_user_frame, location

__all__ = ["Sources", "sources_of"]

_MAX_LINES = 6

# (module, computation, instruction names)
Sources = tuple[tuple[str, ...], tuple[str, ...]]


def _collect(
    comps: Iterable[tuple[CanonicalModule, CanonicalComputation, Iterable[str]]],
) -> tuple[list[str], list[str]]:
    user: list[str] = []
    library: list[str] = []
    for canon, comp, names in comps:
        for name in names:
            ins = comp.computation.by_name.get(name)
            if ins is None:
                continue
            frame, lib = first_user_frame(canon.module.frames_of(ins))
            if frame is not None and (loc := location(frame)) not in user:
                user.append(loc)
            if lib is not None and (loc := location(lib)) not in library:
                library.append(loc)
    return user, library


def sources_of(
    comps: list[tuple[CanonicalModule, CanonicalComputation, tuple[str, ...]]],
    users: list[tuple[CanonicalModule, CanonicalComputation, list[str]]],
) -> Sources:
    """(user lines, library lines) of the named instructions, at most a few of each.

    `users` are the instructions next to them (their users), tried when the named ones carry no
    frame at all or only library frames: constants and plumbing often carry no metadata.
    """
    user, library = _collect(comps)
    if not user:
        near_user, near_library = _collect(users)
        user = near_user
        library = library or near_library
    return tuple(user[:_MAX_LINES]), tuple(library[:_MAX_LINES])
