"""torch_xla's `mark_sharding` wrapped so that each call is recorded: the only place the user's
mesh axes and line are known (the HLO has `{devices=[4,1]0,1,2,3}` only). One wrapper frame is
harmless here: mark_sharding is not a sync, torch_xla names nothing from its frames.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["SHARDING_MODULE", "unwrap_mark_sharding", "wrap_mark_sharding"]

SHARDING_MODULE = "torch_xla.distributed.spmd.xla_sharding"

_real: tuple[Any, Any] | None = None  # (xla_sharding module, its mark_sharding)


def wrap_mark_sharding(module: Any, recorder: Callable[[], Any]) -> None:
    """Record each `mark_sharding(t, mesh, spec)` call of `module` with the recorder that
    `recorder()` returns at the time of the call (None: nothing recorded)."""
    global _real
    real = getattr(module, "mark_sharding", None)
    if real is None or getattr(real, "_xlagraph_wrapped", False):
        return

    @functools.wraps(real)
    def mark_sharding(t: Any, mesh: Any, partition_spec: Any, *args: Any, **kwargs: Any) -> Any:
        result = real(t, mesh, partition_spec, *args, **kwargs)
        rec = recorder()
        if rec is not None and rec.active:
            caller = sys._getframe(1)
            rec.guard(lambda: rec.record_mark_sharding(t, mesh, partition_spec, caller))
        return result

    mark_sharding._xlagraph_wrapped = True  # type: ignore[attr-defined]
    _real = (module, real)
    module.mark_sharding = mark_sharding
    package = sys.modules.get(SHARDING_MODULE.rpartition(".")[0])  # imported before us: re-export
    if package is not None and getattr(package, "mark_sharding", None) is real:
        package.mark_sharding = mark_sharding


def unwrap_mark_sharding() -> None:
    """The real `mark_sharding` back where the wrapper stands."""
    global _real
    if _real is None:
        return
    module, real = _real
    package = sys.modules.get(SHARDING_MODULE.rpartition(".")[0])
    for owner in (module, package):
        if owner is not None and getattr(getattr(owner, "mark_sharding", None), "_xlagraph_wrapped", False):
            owner.mark_sharding = real
    _real = None
