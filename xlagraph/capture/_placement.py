"""Where this process and its tensors sit: the rank record (once per process) and one record per
distinct `mark_sharding` call.

torch_xla is passed in (`xlac`) or imported inside a function, never at module level: the hook
imports this module only once torch_xla is loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.capture._env import env_number
from xlagraph.ir import Frame

__all__ = ["MAX_SHARD_RECORDS", "MarkSharding", "rank_record", "unwrap"]

MAX_SHARD_RECORDS = 4096  # distinct mark_sharding calls kept (FSDPv2 marks every parameter once)
SHARD_FRAMES = 8  # frames kept per mark_sharding call: FSDPv2's own frames come first


def rank_record(host: Any, environ: Mapping[str, str], note: Callable[[str], None]) -> dict[str, Any]:
    """Who this process is: torch_xla's global ordinal, the launcher's RANK / LOCAL_RANK /
    WORLD_SIZE, the host. `rank` is the one the user's code sees: the ordinal in a world of
    several devices, else the SPMD process index, else torchrun's RANK (torch_xla on CPU gives
    each torchrun process a world of one, while the script shards its data by RANK)."""
    env = {k: environ[k] for k in fmt.RANK_ENV if k in environ}
    record: dict[str, Any] = {"k": fmt.RANK, "rank": None, "world": None}
    try:
        import torch_xla.runtime as xr

        ordinal, world = int(xr.global_ordinal()), int(xr.world_size())
        index, count = int(xr.process_index()), int(xr.process_count())
    except Exception as e:  # rank is nice to have; never a reason to stop capturing
        note(f"rank unknown: {type(e).__name__}: {e}")
        ordinal = world = index = count = None
    env_world = env_number(env, "WORLD_SIZE", None, int)
    env_rank = env_number(env, "RANK", None, int)
    if world is not None and world > 1:
        rank, size, source = ordinal, world, "global ordinal"
    elif count is not None and count > 1:
        rank, size, source = index, count, "process index"
    elif env_world is not None and env_world > 1 and env_rank is not None:
        rank, size, source = env_rank, env_world, "RANK"
    else:
        rank, size, source = ordinal, world, "global ordinal"
    record.update(
        rank=rank,
        world=size,
        source=source,
        ordinal=ordinal,
        ordinals=world,
        process_index=index,
        process_count=count,
        host=host,
        env=env,
    )
    return record


@dataclass(frozen=True)
class MarkSharding:
    """One `mark_sharding` call as the report shows it: `{devices=[4,1]0,1,2,3}` is
    `('data', None)` over mesh ('data',)=(4,), set at train.py:31."""

    frames: tuple[Frame, ...]
    shape: str  # HLO style: f32[8,128]
    mesh: tuple[int, ...]
    axes: tuple[str, ...]
    spec: list[Any]  # as JSON: axis names, indices, None, or lists of those
    sharding: str  # torch_xla's sharding of the tensor after the call

    @staticmethod
    def of(xlac: Any, t: Any, mesh: Any, spec: Any, caller: Any) -> MarkSharding:
        frames = _caller_frames(caller)
        sharding = str(xlac._get_xla_sharding_spec(unwrap(t)))
        shape = fmt.tensor_shape(t)
        axes = tuple(str(a) for a in getattr(mesh, "axis_names", None) or ())
        mesh_shape = tuple(int(d) for d in getattr(mesh, "mesh_shape", ()))
        return MarkSharding(frames, shape, mesh_shape, axes, [_spec_item(x) for x in spec], sharding)

    def key(self) -> tuple[Any, ...]:
        """What makes two calls the same record (the spec by its text: it holds lists)."""
        return (self.frames, self.shape, self.axes, self.mesh, repr(self.spec), self.sharding)

    def record(self, shard_id: int, step: int, tensor: int) -> dict[str, Any]:
        return {
            "k": fmt.SHARD,
            "id": shard_id,
            "step": step,
            "tensor": tensor,
            "shape": self.shape,
            "mesh": list(self.mesh),
            "axes": list(self.axes),
            "spec": self.spec,
            "sharding": self.sharding,
            "frames": [list(f) for f in self.frames],
        }


def unwrap(t: Any) -> Any:
    """An XLAShardedTensor holds the torch_xla tensor in `global_tensor`."""
    return getattr(t, "global_tensor", t)


def _caller_frames(frame: Any) -> tuple[Frame, ...]:
    out = []
    while frame is not None and len(out) < SHARD_FRAMES:
        code = frame.f_code
        out.append(Frame(code.co_name, code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return tuple(out)


def _spec_item(x: Any) -> Any:
    """A partition spec entry as JSON: axis name, axis index, None, or a list of those."""
    if x is None or isinstance(x, (int, str)):
        return x
    if isinstance(x, (tuple, list)):
        return [_spec_item(y) for y in x]
    return str(x)
