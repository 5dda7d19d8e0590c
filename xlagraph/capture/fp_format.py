"""The fingerprint files of a capture (`XLAGRAPH_FINGERPRINTS=1`), shared by writer and reader.

DIR/<host>-<pid>/fingerprints.bin    append-only 32-byte records, little endian:
    a step header  (0xFFFF, 0, step, journal step or -1, tensors that follow, 0, 0.0)
    a tensor       (name id, role, sum, wsum, NaN count, Inf count, norm)
                   struct "<HHqqiif": u16 u16 i64 i64 i32 i32 f32
DIR/<host>-<pid>/fingerprints.jsonl  one JSON object a line, appended as they come:
    {"k": "meta", "backend": "xla"|"cuda"|"cpu", "pid": ..., "torch": ...}
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
    "HEADER_ID",
    "JSONL",
    "RECORD",
    "ROLES",
    "ROLE_ORDER",
]

BIN = "fingerprints.bin"
JSONL = "fingerprints.jsonl"
RECORD = struct.Struct("<HHqqiif")  # 32 bytes
HEADER_ID = 0xFFFF
MAX_NAMES = HEADER_ID  # ids 0 .. 0xFFFE
ROLES = ("input", "loss", "grad", "state", "param", "output")
ROLE_ORDER = {r: i for i, r in enumerate(ROLES)}  # inputs first: what explains the rest comes first

assert RECORD.size == 32
