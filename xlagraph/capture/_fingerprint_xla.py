"""Fingerprints on an XLA device: a graph of their own, after the step's sync, out of the journal.

Run from the recorder's step closure, right after it recorded the step: the tensors the optimizer
step hook saw (still alive; the sync made them device data) are fingerprinted in one small graph,
dispatched without waiting, and fetched a few steps later, when it has long finished. It is traced
and dispatched with torch_xla's eager mode switched on for the one call (`XLATensor::Create` ->
`ApplyEagerSync`, torch_xla 2.5 to 2.9), and what it still reports is taken out of the recorder's
view here (why: docs/divergence.md, "Capture").

Eager mode is process-wide for that call: an XLA op traced by another Python thread while the
call has the GIL released would run at once, as its own graph. Step closures run on the training
thread between steps, where no other thread traces in the loops torch_xla documents."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.capture._debug_stream import decode
from xlagraph.capture._dumps import scan_dumps, unlink
from xlagraph.capture._eager import skip_eager
from xlagraph.capture._xla_counters import counters
from xlagraph.parse.pt_xla_debug import parse_pt_xla_debug

__all__ = ["SideState", "side_graph"]


@dataclass
class SideState:
    """What the fingerprint graph remembers between steps (one per process)."""

    compiles: int = 0  # compiles of the fingerprint graph
    compiles_seen: int = -1  # torch_xla's UncachedCompile count after the last fingerprint graph


def side_graph(rec: Any, tensors: list[Any], state: SideState) -> Any:
    """Fingerprint `tensors` (device data after the sync) in one graph dispatched without waiting,
    and take what torch_xla reports for it out of the recorder `rec`'s view. Returns the table
    (fetched at a later sync); `state` counts the graph's compiles."""
    from xlagraph.capture import _fingerprint_lower

    xlac = rec.xlac
    count = xlac._xla_counter_value("UncachedCompile") or 0
    key = _fingerprint_lower.shapes_key(tensors)
    # torch_xla compiles this graph only for a new computation, or after other compiles (its cache
    # evicts on insertion): only then are the dump folder's files listed to tell its dumps apart.
    dumps: set[str] | None = None
    if not _fingerprint_lower.is_built(key) or count != state.compiles_seen:
        scan_dumps(rec)  # the training graphs' dumps are paired before this graph adds its own
        dumps = _dump_names(rec)
    ir_debug = xlac._get_ir_debug()
    eager = xlac._get_use_eager_mode()
    if ir_debug:  # source lines of this graph are never shown: not worth a Python stack per op
        xlac._set_ir_debug(False)
    if not eager:
        xlac._set_use_eager_mode(True)
    try:
        table = _fingerprint_lower.fingerprint_xla(tensors, key)  # traced, compiled once, dispatched here
    finally:
        if not eager:
            xlac._set_use_eager_mode(False)
        if ir_debug:
            xlac._set_ir_debug(True)
    state.compiles_seen = _absorb(rec, (count, dumps), state)
    skip_eager(rec)  # its ops were compiled in eager mode: not the user's op compiles
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
    UncachedCompile count after it."""
    s = rec.s
    if rec.debug.unread():  # nothing in eager mode; a block written anyway is this graph's: dropped
        _, s.carry = parse_pt_xla_debug(s.carry + decode(rec.debug.read()))
    compiles, _ = counters(rec.xlac)
    new_compiles = compiles - before[0]
    # One execution is this graph's, whenever the (lagging) execution counter shows it. Its
    # compile is booked under EagerCompileTime: the CompileTime metric the journal reads is as
    # the training graphs left it.
    rec.base = (rec.base[0], rec.base[1] + 1, rec.base[2])
    s.compiles, s.executes = compiles, s.executes + 1
    if new_compiles:
        state.compiles += new_compiles
    if rec.plan.hlo_dump and before[1] is not None:
        try:
            names = set(os.listdir(rec.hlo_dir)) - before[1]
        except FileNotFoundError:
            names = set()
        for name in names:
            s.dumps_seen.add(name)
            s.prefixes_done.add(fmt.dump_prefix(name))
            unlink(os.path.join(rec.hlo_dir, name))
    return compiles
