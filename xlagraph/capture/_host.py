"""The recorder as its helpers see it (`_dumps`, `_source_lines`, `_tensors_report`): the run's
state and settings, torch_xla, where files go, and the four calls that change the journal. A
Protocol, so that the helpers name what they use without importing the recorder that calls them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from xlagraph.capture._env import EnvPlan
    from xlagraph.capture._settings import Settings
    from xlagraph.capture._state import GraphEntry, RunState

__all__ = ["Host"]


class Host(Protocol):
    """What `Recorder` (xlagraph/capture/_recorder.py) offers the functions it calls."""

    plan: EnvPlan
    xlac: Any  # torch_xla._XLAC
    settings: Settings
    s: RunState
    dir: str  # the process's capture folder
    hlo_dir: str
    tensors_dir: str
    t0: float  # perf-counter time the recorder started
    paths: Any  # stored_sources.Relativizer: portable paths, and the source lines cited

    def note(self, text: str) -> None:
        """A line for the report's notes."""
        ...

    def update(self, graph: GraphEntry, **fields: Any) -> None:
        """Change a graph's record (an update record once it is in the journal)."""
        ...

    def fits(self, size: int) -> bool:
        """Whether a file of `size` bytes may still be stored (XLAGRAPH_MAX_MB)."""
        ...

    def cap_reason(self, what: str) -> str:
        """The note a graph gets for a file the cap kept out."""
        ...

    def kept(self, path: str) -> None:
        """A dump the capture keeps is complete: make its paths portable now, not at exit."""
        ...
