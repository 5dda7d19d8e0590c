"""One run, many ranks: do the tensors that should be replicated stay bit-identical across ranks?

A tensor is taken as replicated when it is a gradient, optimizer state or parameter, has the
same name, shape and dtype on every rank, and is bit-identical across ranks at the first step
that every rank recorded it (data-parallel parameters, all-reduced gradients); a shard or a
per-rank tensor differs from the start and is left out. A replica drifts at the first later step
where a rank's fingerprint differs from the lowest rank's. Only fingerprints are compared: no
weights are copied anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xlagraph.capture.fingerprint_format import ROLE_ORDER
from xlagraph.diverge.compare import nan_onsets, strip, tensor_rows
from xlagraph.diverge.load import FpRun
from xlagraph.diverge.model import BIT_EXACT, DIVERGED, Divergence, GraphCheck, TensorDiff
from xlagraph.errors import InputError

__all__ = ["REPLICATED_ROLES", "compare_replicas"]

REPLICATED_ROLES = ("grad", "state", "param")


def compare_replicas(
    runs: Sequence[FpRun], graphs: Callable[[FpRun, FpRun, int | None], GraphCheck] | None = None
) -> Divergence:
    if len(runs) < 2:
        raise InputError(
            runs[0].path if runs else "", "one process with fingerprints: nothing to compare across ranks"
        )
    ref, others = runs[0], runs[1:]
    candidates = _candidates(runs)
    replicated = {name for name in candidates if _same_at_start(runs, name)}
    best: tuple[int, int, FpRun, list[TensorDiff]] | None = None
    steps_compared = min(len(r.steps) for r in runs)
    for other in others:
        for k in range(steps_compared):
            if best is not None and k > best[0]:
                break
            sa, sb = ref.steps[k], other.steps[k]
            diffs = []
            for name in replicated:
                fa, fb = sa.values.get(name), sb.values.get(name)
                if fa is not None and fb is not None and fa.bits != fb.bits:
                    diffs.append(TensorDiff(name, ref.tensors[name].role, sa.index, fa, fb, other.rank))
            if diffs:
                key = (k, other.rank if other.rank is not None else 0)
                if best is None or key < (best[0], best[1]):
                    best = (k, key[1], other, diffs)
                break
    rows = tuple((n, r) for n, r in tensor_rows([ref]) if n in replicated)
    onsets = nan_onsets([(r.label, r) for r in runs])
    notes = [
        f"{len(replicated)} of {len(candidates)} gradient/state/parameter tensors replicated "
        f"across {len(runs)} ranks"
    ]
    verdict, k, rank, other = BIT_EXACT, None, None, others[0]
    first: tuple[TensorDiff, ...] = ()
    if best is not None:
        verdict, (k, _, other, diffs) = DIVERGED, best
        rank = other.rank
        first = tuple(
            sorted(diffs, key=lambda d: (ROLE_ORDER.get(d.role, 9), list(ref.tensors).index(d.name)))
        )
    check = graphs(ref, other, k) if graphs else GraphCheck(None, note="graphs not compared")
    return Divergence(
        verdict=verdict,
        mode="replicas",
        steps_compared=steps_compared,
        first_step=k,
        first_rank=rank,
        first=first,
        graphs=check,
        inputs_identical=None,
        inputs_first_differ=None,
        nan_onsets=onsets,
        largest=None,
        rtol=None,
        atol=None,
        sources=tuple(r.path for r in runs),
        tensors=rows,
        strip=strip(ref, other, rows, k, None, None),
        notes=tuple(notes) + tuple(f"{r.label}: {x}" for r in runs for x in r.notes),
        replicated=len(replicated),
    )


def _candidates(runs: Sequence[FpRun]) -> list[str]:
    ref = runs[0]
    out = []
    for name, info in ref.tensors.items():
        if info.role not in REPLICATED_ROLES:
            continue
        if all(
            name in r.tensors and (r.tensors[name].shape, r.tensors[name].dtype) == (info.shape, info.dtype)
            for r in runs[1:]
        ):
            out.append(name)
    return out


def _same_at_start(runs: Sequence[FpRun], name: str) -> bool:
    n = min(len(r.steps) for r in runs)
    for k in range(n):
        values = [r.steps[k].values.get(name) for r in runs]
        if all(v is not None for v in values):
            return all(v.bits == values[0].bits for v in values)  # type: ignore[union-attr]
    return False
