"""The fingerprint files of a capture (`XLAGRAPH_FINGERPRINTS=1`), shared by writer and reader.

DIR/<host>-<pid>/fingerprints.bin    append-only 30-byte records, little endian:
    a step header  (0xFFFF, step, journal step or -1, tensors that follow, 0, 0.0)
    a tensor       (name id, sum, wsum, NaN count, Inf count, norm)
                   struct "<Hqqiif": u16 i64 i64 i32 i32 f32
    (format 1, files whose meta record has no "format": 32-byte records "<HHqqiif" with the
    tensor's role after the id, 0 in a header; the role is in the name record anyway)
DIR/<host>-<pid>/fingerprints.jsonl  one JSON object a line, appended as they come:
    {"k": "meta", "format": 2, "pid": ..., "torch": ...}
    {"k": "rank", "rank": int|null, "world": int|null, "source": ...}
    {"k": "name", "id": int, "name": "encoder.layers.3.fc1.weight.grad", "role": "grad",
     "shape": [...], "dtype": "float32"}
    {"k": "note", "v": "..."}                (a failure, the size cap: recorded once)

A step is an optimizer step (torch.optim step hooks); on XLA the step's fingerprints are computed
after the sync that follows it, and the header names the journal step that sync recorded.
No torch import here: the reader (`xlagraph diverge`) runs without it.
"""

from __future__ import annotations

import struct

__all__ = [
    "BIN",
    "FORMAT",
    "HEADER_ID",
    "JSONL",
    "RECORD",
    "RECORD_V1",
    "ROLES",
    "ROLE_ORDER",
]

BIN = "fingerprints.bin"
JSONL = "fingerprints.jsonl"
FORMAT = 2
RECORD = struct.Struct("<Hqqiif")  # 30 bytes: with a header a step, under 32 per tensor from 15 tensors
RECORD_V1 = struct.Struct("<HHqqiif")  # 32 bytes, format 1 (read only)
HEADER_ID = 0xFFFF
MAX_NAMES = HEADER_ID  # ids 0 .. 0xFFFE
ROLES = ("input", "loss", "grad", "state", "param", "output")
ROLE_ORDER = {r: i for i, r in enumerate(ROLES)}  # inputs first: what explains the rest comes first

assert RECORD.size == 30 and RECORD_V1.size == 32


def record_format(meta: dict[str, object]) -> struct.Struct:
    """The record struct of a fingerprints.bin, from its fingerprints.jsonl meta record."""
    return RECORD if meta.get("format") == FORMAT else RECORD_V1


def fields(record: struct.Struct, data: bytes, pos: int) -> tuple[int, int, int, int, int, float]:
    """(id, sum or step, wsum or journal step, NaN count or tensors, Inf count, norm) at pos,
    whatever the format (format 1's role dropped)."""
    values = record.unpack_from(data, pos)
    if len(values) == 7:
        values = (values[0], *values[2:])
    return values  # type: ignore[return-value]
