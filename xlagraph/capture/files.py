"""The capture folder's file names and journal record kinds, shared by the writer and the reader
(the layout: docs/capture-settings.md, "Capture folder format")."""

from __future__ import annotations

import os
import re
from typing import Any

FORMAT = "xlagraph-capture"
VERDICT = "on_recompile.json"  # XLAGRAPH_ON_RECOMPILE=raise: the helper's explanation (report/watchdog.py)
WATCHDOG_SEEN = "on_recompile.seen"  # how far into the journal the helper has told (bytes)
VERSION = 1
META = "meta.json"
JOURNAL = "journal.jsonl"
HLO_DIR = "hlo"
TENSORS_DIR = "tensors"
HOLDERS_SUFFIX = ".holders.json"  # beside a live-tensor report: what keeps each tensor alive
LINES_DIR = "lines"
LOWERED_SUFFIX = ".lowered.txt"
DEBUG_FILE = "pt_xla_debug.txt"
TORCH_TRACE = "torch_trace.log"
DEBUG_READING = "pt_xla_debug.reading.txt"  # renamed away while the hook reads it
BEFORE_SUFFIX = ".before_optimizations.txt"
AFTER_SUFFIX = "after_optimizations.txt"  # `<prefix>.cpu_after_optimizations.txt` (platform first)
DUMP_MODULE = re.compile(r"^(?:\d+\.)?module_(\d+)\.")
_PARTITIONS = re.compile(r"\bnum_partitions=(\d+)")

# Journal record kinds (key "k").
START, FRAMES, CAUSE, GRAPH, STEP, NOTE, RANK, END, SHARD = (
    "start",
    "frames",
    "cause",
    "graph",
    "step",
    "note",
    "rank",
    "end",
    "shard",  # one distinct mark_sharding call: tensor, mesh, partition spec, sharding, frames
)
RANK_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK")  # torchrun's


CAPTURE_MARKERS = (META, JOURNAL, TORCH_TRACE)  # any one makes a folder a process's capture folder


def _has_marker(folder: str) -> bool:
    # lexists: a FIFO or a dangling link named journal.jsonl is a capture the reader refuses by name.
    return any(os.path.lexists(os.path.join(folder, name)) for name in CAPTURE_MARKERS)


def is_capture_dir(path: str) -> bool:
    """True for a capture folder or a folder of per-process capture folders."""
    if not os.path.isdir(path):
        return False
    if _has_marker(path):
        return True
    try:
        return any(e.is_dir() and _has_marker(e.path) for e in os.scandir(path))
    except OSError:
        return False


def dump_order(name: str) -> int:
    """The module number of a --xla_dump_to file name: XLA numbers modules in creation order."""
    m = DUMP_MODULE.match(name)
    return int(m.group(1)) if m else -1


def dump_prefix(name: str) -> str:
    """`module_0003.SyncTensorsGraph.12` of any dump file of that module."""
    if name.endswith(BEFORE_SUFFIX):
        return name.removesuffix(BEFORE_SUFFIX)
    return name.rsplit(".", 2)[0] if name.endswith(AFTER_SUFFIX) else name


def partitions(first_line: str) -> int:
    """`num_partitions=N` of an `HloModule` line: more than 1 for a graph SPMD partitions."""
    m = _PARTITIONS.search(first_line)
    return int(m.group(1)) if m else 1


def layout_arity(first_line: str) -> int:
    """Number of entry parameters in an `HloModule ..., entry_computation_layout={(...)->...}`
    line, -1 if it has none. Used to check that dump files and compiles are paired right."""
    start = first_line.find("entry_computation_layout={(")
    if start < 0:
        return -1
    depth, count, empty = 0, 0, True
    for ch in first_line[start + len("entry_computation_layout={(") :]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return 0 if empty else count + 1
            depth -= 1
        elif ch == "," and depth == 0:
            count += 1
        elif not ch.isspace():
            empty = False
    return -1


# torch dtypes as XLA spells element types (`f32[8,5]`, as the live-tensor report prints shapes).
_XLA_TYPES = {
    "float32": "f32",
    "float64": "f64",
    "float16": "f16",
    "bfloat16": "bf16",
    "int64": "s64",
    "int32": "s32",
    "int16": "s16",
    "int8": "s8",
    "uint8": "u8",
    "bool": "pred",
    "complex64": "c64",
}


def tensor_shape(t: Any) -> str:
    """A torch tensor's shape as XLA prints it (`bf16[8,5]`), as records write shapes."""
    name = str(t.dtype).removeprefix("torch.")
    return f"{_XLA_TYPES.get(name, name)}[{','.join(str(int(d)) for d in t.shape)}]"
