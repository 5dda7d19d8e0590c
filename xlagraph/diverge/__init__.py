"""Run-to-run divergence: where two runs (or the ranks of one) stop being bit-exact.

    load (fingerprint files -> FpRun) -> compare / replicas (-> Divergence) -> render (text, JSON, HTML)

Pure functions over the fingerprints `XLAGRAPH_FINGERPRINTS=1` records; no torch import.
"""

from __future__ import annotations

import os
from dataclasses import replace

from xlagraph._callable import make_callable
from xlagraph.diverge.compare import compare_runs
from xlagraph.diverge.graphs import check_graphs
from xlagraph.diverge.load import Fingerprint, FpRun, FpStep, TensorInfo, load_fingerprints
from xlagraph.diverge.model import BIT_EXACT, DIVERGED, WITHIN_TOLERANCE, Divergence
from xlagraph.diverge.replicas import compare_replicas
from xlagraph.diverge.zoom import ZoomFinding, ZoomValue, zoom_in

__all__ = [
    "BIT_EXACT",
    "DIVERGED",
    "WITHIN_TOLERANCE",
    "Divergence",
    "Fingerprint",
    "FpRun",
    "FpStep",
    "TensorInfo",
    "ZoomFinding",
    "ZoomValue",
    "compare_replicas",
    "compare_runs",
    "diverge",
    "load_fingerprints",
    "replica_drift",
    "with_zoom",
    "zoom_in",
]


def diverge(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> Divergence:
    """`xlagraph diverge A B` (two runs) or `xlagraph diverge DIR` (the ranks of one run)."""
    runs_a = load_fingerprints(a)
    if b is None:
        d = compare_replicas(runs_a, check_graphs)
        return with_zoom(d, runs_a[0], _rank(runs_a, d.first_rank))
    runs_b = load_fingerprints(b)
    d = compare_runs(runs_a, runs_b, rtol, atol, check_graphs)
    return with_zoom(d, _rank(runs_a, d.first_rank), _rank(runs_b, d.first_rank))


def with_zoom(d: Divergence, a: FpRun, b: FpRun) -> Divergence:
    """`d` with the second pass's finding at its first divergent step, when both sides recorded
    one (XLAGRAPH_ZOOM=K); without one, a note saying how to get it."""
    if d.first_step is None:
        return d
    found = zoom_in(a.path, b.path, d.first_step)
    if found is None:
        hint = f"to name the first op where values part: rerun both with XLAGRAPH_ZOOM={d.first_step}"
        return replace(d, notes=(*d.notes, hint))
    return replace(d, zoom=found)


def _rank(runs: tuple[FpRun, ...], rank: int | None) -> FpRun:
    return next((r for r in runs if rank is not None and r.rank == rank), runs[0])


def replica_drift(path: str | os.PathLike[str]) -> Divergence | None:
    """For `xlagraph check`: the replica comparison of a capture with fingerprints of two or more
    processes; None when there is nothing to compare (no fingerprints, one process)."""
    from xlagraph.errors import InputError

    try:
        runs = load_fingerprints(path)
    except InputError:
        return None
    return compare_replicas(runs, check_graphs) if len(runs) >= 2 else None


make_callable(__name__)  # `xlagraph.diverge(a, b)` calls xlagraph.api.diverge (xlagraph/_callable.py)
