"""The users of each instruction of a canonical computation, shared by the diagnosis steps."""

from __future__ import annotations

from collections.abc import Mapping

from xlagraph._kept import kept_while_alive
from xlagraph.canonical import CanonicalComputation
from xlagraph.match import _compiled

__all__ = ["users_of"]


@kept_while_alive
def users_of(comp: CanonicalComputation) -> Mapping[str, list[str]]:
    """Users of each instruction, in `comp.order`; shared between callers, so never modify it
    (nor a list it gives: from the core's copy, a mapping that makes each list when asked)."""
    # The matcher's copy of `comp` answers (made now where the matcher did not read `comp`).
    return _compiled.users(comp)
