"""Python twins of what the compiled core does, kept as test oracles only: the library calls the
core (rust/src/), and the equivalence tests hold the core to these readable references."""

from __future__ import annotations

from xlagraph import _core

__all__ = ["phases"]


def phases() -> tuple[str, ...]:
    """The matcher's phases in the order the core runs them: the one list, the core's
    (`_core.match_phases()`, rust/src/matching/matcher.rs `PHASES`)."""
    return tuple(_core.match_phases())
