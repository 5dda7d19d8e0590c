"""Run-to-run divergence: where two runs (or the ranks of one) stop being bit-exact.

    load (fingerprint files -> FpRun) -> compare / replicas (-> Divergence) -> render (text, JSON, HTML)

Pure functions over the fingerprints `XLAGRAPH_FINGERPRINTS=1` records; no torch import.
"""

from __future__ import annotations

import os

from xlagraph._callable import make_callable
from xlagraph.diverge.compare import compare_runs
from xlagraph.diverge.graphs import check_graphs
from xlagraph.diverge.load import Fingerprint, FpRun, FpStep, TensorInfo, load_fingerprints
from xlagraph.diverge.model import BIT_EXACT, DIVERGED, WITHIN_TOLERANCE, Divergence
from xlagraph.diverge.replicas import compare_replicas

__all__ = [
    "BIT_EXACT",
    "DIVERGED",
    "WITHIN_TOLERANCE",
    "Divergence",
    "Fingerprint",
    "FpRun",
    "FpStep",
    "TensorInfo",
    "compare_replicas",
    "compare_runs",
    "diverge",
    "load_fingerprints",
    "replica_drift",
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
        return compare_replicas(runs_a, check_graphs)
    return compare_runs(runs_a, load_fingerprints(b), rtol, atol, check_graphs)


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
