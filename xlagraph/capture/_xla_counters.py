"""torch_xla's counters and metrics as the recorder reads them around each step marker: compiles
and executions so far, compile durations, and the aten ops run on the CPU.

`xlac` is `torch_xla._XLAC`, passed in; torch_xla is never imported here.
"""

from __future__ import annotations

from typing import Any

from xlagraph.capture._state import RunState

__all__ = ["compile_metric", "compile_seconds", "counters", "fallbacks"]


def counters(xlac: Any) -> tuple[int, int]:
    """(compiles, executions) torch_xla has counted in this process."""
    value = xlac._xla_counter_value
    executes = (value("ExecuteComputation") or 0) + (value("ExecuteReplicated") or 0)
    return value("UncachedCompile") or 0, executes


def fallbacks(xlac: Any, s: RunState) -> dict[str, int]:
    """aten ops torch_xla ran on the CPU since the last step, and how often: each one cuts the
    step's graph and runs (and compiles) graphs no sync of the user's shows."""
    ops = getattr(xlac, "_get_executed_fallback_ops", None)
    if ops is None:
        return {}
    grown = {}
    for name in ops():
        count = xlac._xla_counter_value(name) or 0
        if count > s.fallbacks.get(name, 0):
            grown[name] = count - s.fallbacks.get(name, 0)
            s.fallbacks[name] = count
    return grown


def compile_metric(xlac: Any) -> tuple[int, float]:
    """(count, total nanoseconds) of torch_xla's CompileTime metric."""
    data = xlac._xla_metric_data("CompileTime")
    return (int(data[0]), float(data[1])) if data else (0, 0.0)


def compile_seconds(xlac: Any, s: RunState) -> list[float]:
    """Durations of the compiles since the last call, from the CompileTime metric's samples."""
    data = xlac._xla_metric_data("CompileTime")
    samples = [(ts, ns) for ts, ns in (data[2] if data else ()) if ts > s.compile_sample_ts]
    if samples:
        s.compile_sample_ts = samples[-1][0]
    return [round(ns / 1e9, 6) for _, ns in samples]
