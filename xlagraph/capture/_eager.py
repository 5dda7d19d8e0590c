"""torch_xla's eager mode (`torch_xla.experimental.eager_mode(True)`): each op is compiled and run
on its own. torch_xla books those compiles under the `EagerOpCompileTime` metric, not `CompileTime`,
and writes no PT_XLA_DEBUG block for them, so the journal's graphs never show them.

Each step record lists the op compiles since the one before (`eo`: `[module, seconds]`, the op's
dumped before-optimizations module where it was kept, "" where not). An op's dump is told from a
graph's by time: the two metrics' samples, merged in time order, say which of the new dump files
(numbered in compile order) each compile wrote. Where the counts disagree, no op module is named
and the dumps are left to the graphs' pairing, as without eager mode.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from xlagraph.capture import files as fmt
from xlagraph.capture._dumps import unlink

if TYPE_CHECKING:
    from xlagraph.capture._host import Host

__all__ = ["EAGER_METRIC", "eager_compiles", "eager_count", "eager_on", "skip_eager"]

EAGER_METRIC = "EagerOpCompileTime"
_GRAPH_METRIC = "CompileTime"


def eager_on(xlac: Any) -> bool:
    """Whether torch_xla runs ops eagerly now (torch_xla.compile turns it off inside its call)."""
    get = getattr(xlac, "_get_use_eager_mode", None)
    return bool(get()) if get is not None else False


def eager_count(xlac: Any) -> int:
    data = xlac._xla_metric_data(EAGER_METRIC)
    return int(data[0]) if data else 0


def _samples(xlac: Any, metric: str, after: float) -> list[tuple[float, float]]:
    data = xlac._xla_metric_data(metric)
    return [(float(ts), float(ns)) for ts, ns in (data[2] if data else ()) if ts > after]


def skip_eager(rec: Host) -> None:
    """The op compiles so far are not the user's (the fingerprint graph's, run in eager mode)."""
    s = rec.s
    count = eager_count(rec.xlac)
    s.eager_skipped += count - s.eager_count
    s.eager_count = count
    if samples := _samples(rec.xlac, EAGER_METRIC, s.eager_sample_ts):
        s.eager_sample_ts = samples[-1][0]


def eager_compiles(rec: Host) -> list[list[Any]]:
    """The op compiles since the last call, `[[module or "", seconds], ...]`; their dumps are taken
    out of the graphs' pairing. Call before the step's graphs are paired with their dumps."""
    s = rec.s
    count = eager_count(rec.xlac)
    new = count - s.eager_count
    if new <= 0:
        return []
    s.eager_count = count
    samples = _samples(rec.xlac, EAGER_METRIC, s.eager_sample_ts)
    if samples:
        s.eager_sample_ts = samples[-1][0]
    # torch_xla keeps a bounded number of samples: the oldest compiles may have none (0 seconds)
    seconds = [0.0] * max(0, new - len(samples)) + [ns / 1e9 for _, ns in samples[-new:]]
    names = _take_dumps(rec, samples, new) if rec.plan.hlo_dump else [""] * new
    return [[name, round(sec, 6)] for name, sec in zip(names, seconds, strict=True)]


def _take_dumps(rec: Host, samples: list[tuple[float, float]], new: int) -> list[str]:
    s = rec.s
    graphs = _samples(rec.xlac, _GRAPH_METRIC, s.compile_sample_ts)  # read, not consumed
    kinds = [k for _, k in sorted([(ts, "e") for ts, _ in samples] + [(ts, "g") for ts, _ in graphs])]
    try:
        entries = os.listdir(rec.hlo_dir)
    except FileNotFoundError:
        return [""] * new
    dumps = sorted(
        (n for n in entries if n.endswith(fmt.BEFORE_SUFFIX) and n not in s.dumps_seen), key=fmt.dump_order
    )
    if len(samples) != new or len(dumps) != len(kinds):
        if not s.eager_unnamed:
            s.eager_unnamed = True
            rec.note(
                f"eager mode: {new} op compile(s) and {len(dumps)} new dump file(s) do not pair up; "
                "op compiles from here on may be counted without their op and shapes"
            )
        return [""] * new
    names = []
    for name, kind in zip(dumps, kinds, strict=True):
        if kind == "g":
            continue  # a graph's: left to scan_dumps
        s.dumps_seen.add(name)
        s.prefixes_done.add(fmt.dump_prefix(name))  # its after-optimizations twin is deleted
        path = os.path.join(rec.hlo_dir, name)
        try:
            size = os.path.getsize(path)
        except OSError:
            names.append("")
            continue
        if rec.fits(size):
            s.stored_bytes += size
            rec.kept(path)
            names.append(f"{fmt.HLO_DIR}/{name}")
        else:
            unlink(path)
            names.append("")
    return names
