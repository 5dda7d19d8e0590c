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
from dataclasses import dataclass
from typing import Any

from xlagraph.capture import _format as fmt
from xlagraph.capture._debug_stream import decode
from xlagraph.capture._dumps import scan_dumps, unlink
from xlagraph.parse.pt_xla_debug import parse_pt_xla_debug

__all__ = ["SideState", "side_graph"]


@dataclass
class SideState:
    """What the fingerprint graph remembers between steps (one per process)."""

    compiles: int = 0  # compiles of the fingerprint graph
    compiles_seen: int = -1  # torch_xla's compile count after the last fingerprint graph
    debug_seen: tuple[Any, str] = (None, "")  # the fingerprint graph's debug text, parsed


def side_graph(rec: Any, tensors: list[Any], state: SideState) -> Any:
    """Fingerprint `tensors` (device data after the sync) in one graph dispatched without waiting,
    and take what torch_xla reports for it out of the recorder `rec`'s view. Returns the table
    (fetched at a later sync); `state` counts the graph's compiles."""
    from xlagraph.capture import _fp_lower
    from xlagraph.capture._fingerprints import fingerprint

    ir_debug = rec.xlac._get_ir_debug()
    if ir_debug:  # source lines of this graph are never shown: not worth a Python stack per op
        rec.xlac._set_ir_debug(False)
    try:
        built = _fp_lower.built
        table = fingerprint(tensors)
    finally:
        if ir_debug:
            rec.xlac._set_ir_debug(True)
    # torch_xla compiles this graph only for a new computation, or after other compiles (its cache
    # evicts on insertion): only then are the dump folder's files listed to tell its dumps apart.
    count = rec._compile_metric()[0]
    dumps: set[str] | None = None
    if _fp_lower.built != built or count != state.compiles_seen:
        scan_dumps(rec)  # the training graphs' dumps are paired before this graph adds its own
        dumps = _dump_names(rec)
    rec.xlac._xla_sync_multi([table], [], False)
    state.compiles_seen = _absorb(rec, (count, dumps), state)
    return table


def _dump_names(rec: Any) -> set[str]:
    if not rec.plan.hlo_dump:
        return set()
    try:
        return set(os.listdir(rec.hlo_dir))
    except FileNotFoundError:
        return set()


def _absorb(rec: Any, before: tuple[int, set[str] | None], state: SideState) -> int:
    """Take what torch_xla reported for the fingerprint graph out of the recorder's view; the
    compile count after it."""
    s = rec.s
    data = rec.debug.read()
    if data:  # its analysis blocks: dropped. The same text every step: parsed once
        if state.debug_seen[0] == (s.carry, data):
            s.carry = state.debug_seen[1]
        else:
            key = (s.carry, data)
            _, s.carry = parse_pt_xla_debug(s.carry + decode(data))
            state.debug_seen = (key, s.carry)
    compiles, _ = rec._counters()
    count = rec._compile_metric()[0]
    new_compiles = count - before[0]
    # One execution is this graph's, whenever the (lagging) execution counter shows it.
    rec.base = (rec.base[0], rec.base[1] + 1, rec.base[2] + new_compiles)
    s.compiles, s.executes = compiles, s.executes + 1
    if new_compiles:
        state.compiles += new_compiles
        metric = rec.xlac._xla_metric_data("CompileTime")
        if metric and metric[2]:
            s.compile_sample_ts = max(s.compile_sample_ts, metric[2][-1][0])
    if rec.plan.hlo_dump and before[1] is not None:
        try:
            names = set(os.listdir(rec.hlo_dir)) - before[1]
        except FileNotFoundError:
            names = set()
        for name in names:
            s.dumps_seen.add(name)
            s.prefixes_done.add(fmt.dump_prefix(name))
            unlink(os.path.join(rec.hlo_dir, name))
    return count
