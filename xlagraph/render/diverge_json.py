"""`xlagraph diverge --json`: the stable contract (docs/divergence.md), then details.

Contract keys: verdict, first {step, tensor, role, rank, graphs_identical, inputs_identical},
nan_onset {step, tensor} | null, steps_compared. Everything else is extra and may grow.
"""

from __future__ import annotations

import math
from typing import Any

from xlagraph.diverge.load import Fingerprint
from xlagraph.diverge.model import Divergence, TensorDiff
from xlagraph.diverge.zoom import ZoomFinding, ZoomValue

__all__ = ["divergence_to_json"]


def divergence_to_json(d: Divergence) -> dict[str, Any]:
    first = None
    if d.first:
        t = d.first[0]
        first = {
            "step": t.step,
            "tensor": t.name,
            "role": t.role,
            "rank": d.first_rank,
            "graphs_identical": bool(d.graphs.identical),
            "inputs_identical": d.inputs_identical,
        }
    onset = {"step": d.nan_onsets[0].step, "tensor": d.nan_onsets[0].tensor} if d.nan_onsets else None
    g = d.graphs
    return {
        "verdict": d.verdict,
        "first": first,
        "nan_onset": onset,
        "steps_compared": d.steps_compared,
        # -- details (not part of the stable contract) --
        "mode": d.mode,
        "sources": list(d.sources),
        "first_tensors": [_tensor(t) for t in d.first],
        "inputs_first_differ": d.inputs_first_differ,
        "graphs": {
            "identical": g.identical,
            "journal_step": g.journal_step,
            "sync": g.sync,
            "hash_a": g.hash_a or None,
            "hash_b": g.hash_b or None,
            "causes": list(g.causes),
            "note": g.note or None,
        },
        "nan_onsets": [
            {"run": o.run, "tensor": o.tensor, "role": o.role, "step": o.step, "nan": o.nan, "inf": o.inf}
            for o in d.nan_onsets
        ],
        "tolerance": None if d.rtol is None and d.atol is None else {"rtol": d.rtol, "atol": d.atol},
        "largest_deviation": None
        if d.largest is None
        else {
            "step": d.largest.step,
            "tensor": d.largest.tensor,
            "abs": _num(d.largest.abs),
            "rel": _num(d.largest.rel),
        },
        "replicated_tensors": d.replicated,
        "zoom": _zoom(d.zoom),
        "notes": list(d.notes),
    }


def _tensor(t: TensorDiff) -> dict[str, Any]:
    return {"tensor": t.name, "role": t.role, "step": t.step, "rank": t.rank, "a": _fp(t.a), "b": _fp(t.b)}


def _fp(f: Fingerprint) -> dict[str, Any]:
    return {"sum": f.sum, "wsum": f.wsum, "nan": f.nan, "inf": f.inf, "norm": _num(f.norm)}


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)  # JSON has no NaN/Inf


def _zoom(z: ZoomFinding | None) -> dict[str, Any] | None:
    if z is None:
        return None
    return {
        "step": z.step,
        "kind": z.kind,
        "values_agreeing_before": z.compared,
        "a": _zoom_value(z.a),
        "b": _zoom_value(z.b),
        "note": z.note or None,
        "why": z.why or None,
    }


def _zoom_value(v: ZoomValue | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {
        "index": v.index,
        "op": v.op,
        "io": v.io,
        "name": v.name or None,
        "shape": list(v.shape),
        "dtype": v.dtype,
        "user_line": v.at or None,
        "library_line": v.lib or None,
        "autograd_node": v.node or None,
        "stream": v.stream,
        "args": list(v.args),
    }
