"""Python twins of what the compiled core does, kept as test oracles only: the library calls the
core (rust/src/), and the equivalence tests hold the core to these readable references."""

from __future__ import annotations

from xlagraph import _core

__all__ = ["phases"]

# until the core exports match_phases
_PHASES = (
    "outputs-exact",
    "outputs-context",
    "outputs-balanced",
    "top-down",
    "exact-h1",
    "exact-h0",
    "top-down",
    "bottom-up",
    "outputs-all",
    "parameters",
    "top-down",
    "bottom-up",
    "top-down-lenient",
)


def phases() -> tuple[str, ...]:
    """The matcher's phases in the order the core runs them (`_core.match_phases()`)."""
    exported = getattr(_core, "match_phases", None)  # until the core exports match_phases
    return tuple(exported()) if exported is not None else _PHASES
