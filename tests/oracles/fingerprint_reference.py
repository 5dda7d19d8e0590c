"""A tensor's fingerprint computed the slow, obvious way on the host, in Python integers: what
`xlagraph.capture._fingerprints.fingerprint` must equal (its integer fields)."""

from __future__ import annotations

import torch

from xlagraph.capture._fingerprints import _INT_OF_FLOAT, fingerprint

__all__ = ["fingerprint_rows", "reference_row"]


def reference_row(t: torch.Tensor) -> tuple[int, int, int, int]:
    """(sum, wsum, nan, inf) of one tensor."""
    t = t.detach().cpu().reshape(-1)
    bits = t.view(_INT_OF_FLOAT[t.dtype]) if t.dtype in _INT_OF_FLOAT else t.to(torch.int64)
    values = [int(v) for v in bits.tolist()]
    wrap = lambda v: (v + (1 << 63)) % (1 << 64) - (1 << 63)  # noqa: E731
    s = wrap(sum(values))
    w = wrap(sum(v * (i + 1) for i, v in enumerate(values)))
    if t.is_floating_point():
        return s, w, int(torch.isnan(t).sum()), int(torch.isinf(t).sum())
    return s, w, 0, 0


def fingerprint_rows(tensors: list[torch.Tensor]) -> list[tuple[int, int, int, int, float]]:
    """`fingerprint` fetched to the host: (sum, wsum, nan, inf, norm) per tensor."""
    table = fingerprint(tensors).cpu()
    norms = table[:, 4].to(torch.int32).view(torch.float32).tolist()
    rows = table.tolist()
    return [(int(r[0]), int(r[1]), int(r[2]), int(r[3]), float(n)) for r, n in zip(rows, norms, strict=True)]
