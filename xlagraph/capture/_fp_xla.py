"""Fingerprints on an XLA device: a graph of their own, after the step's sync, out of the journal.

Run from the recorder's step closure, right after it recorded the step: the tensors the optimizer
step hook saw (still alive; the sync made them device data) are fingerprinted in one small graph,
dispatched without waiting (`_xla_sync_multi(wait=False)`), and fetched at the next sync, when it
has long finished. torch_xla compiles that graph once per set of shapes and caches it.

The graph must never look like the user's: what torch_xla reports for it (its PT_XLA_DEBUG
block, the compile and execution counters, the CompileTime sample, its --xla_dump_to files) is
consumed here at once, so the journal holds the training graphs only. With and without
fingerprints the training graphs have the same hashes and the same compile count.
"""

from __future__ import annotations

import os
from typing import Any

from xlagraph.capture import _format as fmt
from xlagraph.capture._debug_stream import decode
from xlagraph.capture._dumps import scan_dumps, unlink
from xlagraph.parse.pt_xla_debug import parse_pt_xla_debug

__all__ = ["side_graph"]


def side_graph(rec: Any, tensors: list[Any]) -> tuple[Any, int]:
    """Fingerprint `tensors` (device data after the sync) in one graph dispatched without waiting,
    and take what torch_xla reports for it out of the recorder `rec`'s view. Returns the table
    (fetched at a later sync) and how many times this graph compiled."""
    from xlagraph.capture._fingerprints import fingerprint

    scan_dumps(rec)  # the training graphs' dumps are paired before this graph adds its own
    before = _side_counts(rec)
    ir_debug = rec.xlac._get_ir_debug()
    if ir_debug:  # source lines of this graph are never shown: not worth a Python stack per op
        rec.xlac._set_ir_debug(False)
    try:
        table = fingerprint(tensors)
    finally:
        if ir_debug:
            rec.xlac._set_ir_debug(True)
    rec.xlac._xla_sync_multi([table], [], False)
    return table, _absorb(rec, before)


def _side_counts(rec: Any) -> tuple[int, set[str]]:
    count = rec._compile_metric()[0]
    try:
        names = set(os.listdir(rec.hlo_dir)) if rec.plan.hlo_dump else set()
    except FileNotFoundError:
        names = set()
    return count, names


def _absorb(rec: Any, before: tuple[int, set[str]]) -> int:
    """Take what torch_xla reported for the fingerprint graph out of the recorder's view; the
    number of compiles it took."""
    s = rec.s
    data = rec.debug.read()
    if data:
        _, s.carry = parse_pt_xla_debug(s.carry + decode(data))  # its analysis blocks: dropped
    compiles, _ = rec._counters()
    count = rec._compile_metric()[0]
    new_compiles = count - before[0]
    # One execution is this graph's, whenever the (lagging) execution counter shows it.
    rec.base = (rec.base[0], rec.base[1] + 1, rec.base[2] + new_compiles)
    s.compiles, s.executes = compiles, s.executes + 1
    if new_compiles:
        metric = rec.xlac._xla_metric_data("CompileTime")
        if metric and metric[2]:
            s.compile_sample_ts = max(s.compile_sample_ts, metric[2][-1][0])
    if rec.plan.hlo_dump:
        try:
            names = set(os.listdir(rec.hlo_dir)) - before[1]
        except FileNotFoundError:
            names = set()
        for name in names:
            s.dumps_seen.add(name)
            s.prefixes_done.add(fmt.dump_prefix(name))
            unlink(os.path.join(rec.hlo_dir, name))
    return new_compiles
