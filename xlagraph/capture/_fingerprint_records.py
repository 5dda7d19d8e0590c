"""The bytes of fingerprints.bin for a batch of steps (fingerprint_format.RECORD), from fetched tables.

Each step is a header record followed by its tensors' records sorted by name id (stable: a name
seen twice in a step keeps its order). A batch is laid out with numpy in one pass whatever the
number of steps: a `struct.pack` per tensor costs ~5 us, torch ops more.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from xlagraph.capture import fingerprint_format as ff

__all__ = ["Step", "records"]

Step = tuple[int, int, list[int], list[Any]]  # (step, journal step or -1, name ids, int64 (n, 5) CPU tables)

_COUNT_MAX = (1 << 31) - 1  # counts are never negative; the field is 32-bit
_RECORD_DTYPE = [  # fingerprint_format.RECORD as a packed numpy record ("<Hqqiif")
    ("id", "<u2"),
    ("sum", "<i8"),
    ("wsum", "<i8"),
    ("nan", "<i4"),
    ("inf", "<i4"),
    ("norm", "<f4"),
]


def records(steps: Sequence[Step]) -> bytes:
    """Headers and tensor records of `steps`, in order."""
    try:
        import numpy as np
    except ImportError:  # torch without numpy
        return b"".join(_records_struct(step) for step in steps)
    counts = np.array([len(ids) for _, _, ids, _ in steps], dtype=np.int64)
    heads = np.arange(len(steps), dtype=np.int64)
    heads[1:] += np.cumsum(counts)[:-1]  # a step's header: after the earlier steps' records
    out = np.zeros(len(steps) + int(counts.sum()), dtype=_RECORD_DTYPE)
    out["id"][heads] = ff.HEADER_ID
    out["sum"][heads] = [s for s, _, _, _ in steps]
    out["wsum"][heads] = [j for _, j, _, _ in steps]
    out["nan"][heads] = counts
    if len(out) > len(steps):
        ids = np.concatenate([np.asarray(i, dtype=np.int64) for _, _, i, _ in steps])
        table = np.concatenate([t.numpy() for _, _, _, tables in steps for t in tables])
        order = np.argsort(np.repeat(heads, counts) * 65536 + ids, kind="stable")  # by step, then id
        table = table[order]
        body = np.ones(len(out), dtype=bool)
        body[heads] = False
        rows = np.flatnonzero(body)
        out["id"][rows] = ids[order]
        out["sum"][rows], out["wsum"][rows] = table[:, 0], table[:, 1]
        out["nan"][rows] = np.minimum(table[:, 2], _COUNT_MAX)
        out["inf"][rows] = np.minimum(table[:, 3], _COUNT_MAX)
        out["norm"][rows] = table[:, 4].astype(np.int32).view(np.float32)  # the f32 bits, as they are
    return out.tobytes()


def _records_struct(step: Step) -> bytes:
    number, jstep, ids, tables = step
    header = ff.RECORD.pack(ff.HEADER_ID, number, jstep, len(ids), 0, 0.0)
    rows = sorted(zip(ids, (r for t in tables for r in t.tolist()), strict=True), key=lambda r: r[0])
    clip = lambda v: max(-(1 << 31), min(_COUNT_MAX, v))  # noqa: E731
    norm = lambda bits: struct.unpack("<f", struct.pack("<i", clip(bits)))[0]  # noqa: E731
    return header + b"".join(
        ff.RECORD.pack(i, r[0], r[1], clip(r[2]), clip(r[3]), norm(r[4])) for i, r in rows
    )
