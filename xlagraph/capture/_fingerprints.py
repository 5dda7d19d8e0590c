"""Exact, order-independent fingerprints of tensors' bit patterns. Pure tensor code.

Per tensor, five numbers (one int64 row): `sum`, `wsum`, `nan`, `inf` and `norm`, as
docs/divergence.md ("Fingerprint") defines them. Integer sums modulo 2**64 do not depend on the
order of the additions, so a reduction that the device splits differently from run to run still
gives the same fingerprint, while any change of any bit changes `sum`. Integer tensors (token
ids) are summed as they are, booleans as 0/1.

Cost on CUDA and CPU: per dtype, one concatenation of the flattened tensors and one bit cast
(`view(dtype)`), two int64 cumulative sums (of the bits, and of their running sum: the weighted sum
follows from both, see `_sums_eager`) and two of the NaN/Inf masks, read at the tensors' ends
(exact modulo 2**64). Norms come from one `_foreach_norm`. On an XLA device the whole table is one
user computation (`_fingerprint_lower`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["FIELDS", "MAX_CHUNK", "fingerprint"]

FIELDS = ("sum", "wsum", "nan", "inf", "norm")
MAX_CHUNK = 1 << 26  # elements concatenated at once: bounds the temporary copies (int64: 512 MiB)

_INT_OF_FLOAT = {
    torch.float64: torch.int64,
    torch.float32: torch.int32,
    torch.bfloat16: torch.int16,
    torch.float16: torch.int16,
}
_ENDS: dict[tuple[str, tuple[int, ...]], tuple[torch.Tensor, torch.Tensor]] = {}  # cached per layout
_MAX_CACHED_LAYOUTS = 64
_FILLED = 16  # offsets of at most this many tensors are filled in on the device, not copied there


def fingerprint(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """An int64 tensor (len(tensors), 5) on the tensors' device, rows in the order given.

    All tensors must be on one device. Nothing is synchronized: the caller fetches the result
    (`.cpu()`) when it wants it, so on XLA the fingerprint is a graph of its own, run when fetched.
    """
    if not tensors:
        return torch.zeros((0, len(FIELDS)), dtype=torch.int64)
    device = tensors[0].device
    if device.type == "xla":
        from xlagraph.capture._fingerprint_lower import fingerprint_xla

        return fingerprint_xla(tensors)
    flat = [t.detach().reshape(-1) for t in tensors]
    groups: dict[torch.dtype, list[int]] = {}
    for i, t in enumerate(flat):
        groups.setdefault(t.dtype, []).append(i)
    parts: list[torch.Tensor] = []
    order: list[int] = []
    for dtype, members in groups.items():
        for chunk in _chunks(members, [flat[i].numel() for i in members]):
            parts.append(_sums([flat[i] for i in chunk], dtype))
            order.extend(chunk)
    sums = parts[0] if len(parts) == 1 else torch.cat(parts)
    if order != list(range(len(order))):
        inverse = [0] * len(order)
        for row, i in enumerate(order):
            inverse[i] = row
        sums = sums[_on_device(inverse, device)]
    norms = _norm_bits(flat)
    return torch.cat([sums, norms.unsqueeze(1)], dim=1)


def _chunks(members: list[int], sizes: list[int]) -> list[list[int]]:
    out: list[list[int]] = [[]]
    total = 0
    for i, n in zip(members, sizes, strict=True):
        if out[-1] and total + n > MAX_CHUNK:
            out.append([])
            total = 0
        out[-1].append(i)
        total += n
    return out


def _sums(flat: list[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    """(len(flat), 4) int64: sum, wsum, nan, inf of tensors of one dtype."""
    values = flat[0] if len(flat) == 1 else torch.cat(flat)
    numels = tuple(t.numel() for t in flat)
    floating = dtype in _INT_OF_FLOAT
    bits = values.view(_INT_OF_FLOAT[dtype]) if floating else values
    return _sums_eager(values, bits, numels, floating)


def _sums_eager(
    values: torch.Tensor, bits: torch.Tensor, numels: tuple[int, ...], floating: bool
) -> torch.Tensor:
    """Cumulative sums, read at the tensors' ends: G = cumsum(b), H = cumsum(G) (int64, exact
    modulo 2**64). For a tensor of n elements: sum = G[e] - G[s]; with C_k its own running sums,
    sum(b_i * (i+1)) = (n+1)*sum - sum_k C_k, and sum_k C_k = H[e] - H[s] - n*G[s] (G[k], H[k]:
    sums of the first k). No weight vector, no product: two passes over the data."""
    device = values.device
    ends, starts = _layout(device, numels)
    n = ends - starts
    g = torch.cumsum(bits, 0, dtype=torch.int64)
    h = torch.cumsum(g, 0)
    g_s, g_e = _before(g, starts), _before(g, ends)
    s = g_e - g_s
    w = (n + 1) * s - (_before(h, ends) - _before(h, starts) - n * g_s)
    zero = torch.zeros_like(s)
    if not floating or (device.type == "cpu" and bool(torch.isfinite(values).all())):
        return torch.stack([s, w, zero, zero], dim=1)  # (on the CPU the check costs no device sync)
    counts = []
    for mask in (torch.isnan(values), torch.isinf(values)):
        c = torch.cumsum(mask, 0, dtype=torch.int64)
        counts.append(_before(c, ends) - _before(c, starts))
    return torch.stack([s, w, *counts], dim=1)


def _before(cumulative: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """The sum of the first `index` elements, from an inclusive cumulative sum (0 for none)."""
    picked = cumulative.index_select(0, (index - 1).clamp(min=0))
    return torch.where(index > 0, picked, torch.zeros_like(picked))


def _layout(device: torch.device, numels: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Each tensor's end and start offsets, cached per device (CUDA: per stream) and layout."""
    stream = torch.cuda.current_stream(device).stream_id if device.type == "cuda" else 0
    key = (f"{device}/{stream}", numels)
    hit = _ENDS.get(key)
    if hit is not None:
        return hit
    ends, starts, total = [], [], 0
    for n in numels:
        starts.append(total)
        total += n
        ends.append(total)
    if len(_ENDS) >= _MAX_CACHED_LAYOUTS:
        _ENDS.clear()
    hit = _ENDS[key] = (_on_device(ends, device), _on_device(starts, device))
    return hit


def _on_device(values: list[int], device: torch.device) -> torch.Tensor:
    """An int64 tensor on `device`, made without waiting for the device. On CUDA a copy from
    pageable memory synchronizes the stream with the host, and allocating pinned memory the whole
    device: a fingerprint that waits would hide the very stream races it is there to find (the
    zoom pass fingerprints one tensor at a time). A few values are filled in by kernels instead."""
    if device.type != "cuda":
        return torch.tensor(values, dtype=torch.int64).to(device)
    if len(values) <= _FILLED:
        out = torch.empty(len(values), dtype=torch.int64, device=device)
        for i, v in enumerate(values):
            out[i : i + 1].fill_(v)  # the value is the kernel's argument (`out[i] = v` copies: waits)
        return out
    return torch.tensor(values, dtype=torch.int64).pin_memory().to(device, non_blocking=True)


def _norm_bits(flat: list[torch.Tensor]) -> torch.Tensor:
    """int64 column: the float32 bits of each tensor's L2 norm."""
    floats = [t if t.dtype in (torch.float32, torch.float64) else t.float() for t in flat]
    norms = torch.stack([n.float() for n in torch._foreach_norm(floats)])
    return norms.view(torch.int32).to(torch.int64)
