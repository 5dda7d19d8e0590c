"""What made a sync happen: torch_xla's own wording, else its frames, else the user's line."""

from __future__ import annotations

from xlagraph.diagnose.attribution.lines import LineReader
from xlagraph.diagnose.frames import source_line, user_frames
from xlagraph.report.savefile import is_step_marker
from xlagraph.runlog import Sync

_IMPLICIT = (
    (".item()", ".item()"),
    (".cpu()", ".cpu()"),
    (".tolist()", ".tolist()"),
    (".numpy()", ".numpy()"),
)


def trigger_of(sync: Sync, read_line: LineReader = source_line) -> str:
    """A short label for what made the sync happen (see `TimelineEntry.trigger`).

    torch_xla's own wording (`Sync.cause`) is used when the source has it, else the frames: a
    torch_xla `sync`/`mark_step` frame is an explicit step marker; without one the sync was
    implicit, and the user's line says which (`.item()`, `print`, ...) when it can be read.
    """
    cause = sync.cause.lower()
    frames = sync.frames
    # torch_xla names a compiled program's own run "user code trying to access tensor value": its
    # frames (the bridge's optimized_mod) say it is torch.compile's graph, not a read of the user's
    if "dynamo" in cause or any("torch_xla/_dynamo/" in f.file for f in frames):
        return "dynamo"
    if "torch_xla.compile" in cause or any(
        f.function in ("compile", "_compile") and "torch_xla" in f.file for f in frames
    ):
        return "torch_xla.compile"
    if "mark_step" in cause or any(f.function == "mark_step" and "torch_xla" in f.file for f in frames):
        return "mark_step"
    if ("sync" in cause and "before torch_xla.sync" not in cause) or is_step_marker(frames):
        return "sync"
    if not frames and not cause:
        return "unknown"
    users = user_frames(frames)
    text = read_line(users[0].file, users[0].line) if users else ""
    for pattern, label in _IMPLICIT:
        if pattern in text:
            return label
    if "print(" in text:
        return "print"
    return "implicit"
