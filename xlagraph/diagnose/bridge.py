"""torch.compile's openxla bridge in a run's syncs: its first compile of a graph syncs every
pending tensor (a full `torch_xla.sync()`), later calls only the compiled graph's inputs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from xlagraph.runlog import Sync

__all__ = ["bridge_sync_all", "bridge_synced", "bridged_before"]


def bridge_sync_all(sync: Sync) -> bool:
    """The bridge ran a full sync here: the user's work pending at that point ran in its graph."""
    frames = sync.frames
    return (
        len(frames) > 1
        and frames[0].function in ("sync", "mark_step")
        and frames[0].file.endswith(("torch_xla/torch_xla.py", "torch_xla/core/xla_model.py"))
        and any("torch_xla/_dynamo/" in f.file for f in frames[1:3])
    )


def bridge_synced(syncs: Iterable[Sync]) -> dict[int, int]:
    """Step -> the index of its first sync by which torch.compile's bridge synced all pending work."""
    out: dict[int, int] = {}
    for s in syncs:
        if s.step not in out and bridge_sync_all(s):
            out[s.step] = s.index
    return out


def bridged_before(target: Sync, syncs: Sequence[Sync], triggers: Mapping[int, str]) -> dict[int, int]:
    """`bridge_synced` as `target`'s graph sees it: empty where the compiled program did not run
    on its step up to it (dynamo gave up on it at its recompile limit, or the step never calls
    it), so no work of the bridge's comes back there."""
    ran = any(
        s.step == target.step and s.index <= target.index and triggers.get(s.index) == "dynamo" for s in syncs
    )
    return bridge_synced(syncs) if ran else {}
