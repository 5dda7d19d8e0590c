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
from typing import TYPE_CHECKING, Any

from xlagraph.capture import _format as fmt
from xlagraph.capture._debug_stream import decode
from xlagraph.capture._dumps import scan_dumps, unlink
from xlagraph.parse.pt_xla_debug import parse_pt_xla_debug

if TYPE_CHECKING:
    from xlagraph.capture._fp_capture import _Capture

__all__ = ["after_sync", "finish"]


def after_sync(cap: _Capture, rec: Any) -> None:
    """The step's sync is recorded: write the last fingerprints, start this step's."""
    cap._fetch_inflight()
    if not cap.pending:
        return
    from xlagraph.capture import _fp_lower
    from xlagraph.capture._fingerprints import fingerprint
    from xlagraph.capture._fp_capture import _deref

    tensors, ids = [], []
    names = cap.names
    for name, role, r in cap.pending:  # ~50 tensors a step: kept to one pass, ids looked up inline
        t = _deref(r)
        if t is not None and t.device.type == "xla":
            i = names.get((name, role))
            tensors.append(t)
            ids.append(cap._name_id(name, role, t) if i is None else i)
    cap.pending = []
    if not tensors:
        return
    step = cap.step
    cap.step += 1
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
    if _fp_lower.built != built or count != cap.compiles_seen:
        scan_dumps(rec)  # the training graphs' dumps are paired before this graph adds its own
        dumps = _dump_names(rec)
    rec.xlac._xla_sync_multi([table], [], False)
    cap.compiles_seen = _absorb(rec, (count, dumps))
    cap.inflight.append((table, None, ids, step, rec.s.step - 1))


def finish(cap: _Capture, rec: Any) -> None:
    """At exit: write what is fetched; tensors of a step never synced are not fingerprinted
    (that would run the training graph inside this one)."""
    cap._fetch_inflight()
    if cap.pending:
        cap._jsonl([{"k": "note", "v": "the last optimizer step had no sync after it: not fingerprinted"}])
        cap.pending = []
    if cap.side_compiles:
        cap._jsonl(
            [
                {
                    "k": "note",
                    "v": f"fingerprint graph compiled {cap.side_compiles} time(s), run after each sync; "
                    "left out of the journal",
                }
            ]
        )


def _dump_names(rec: Any) -> set[str]:
    if not rec.plan.hlo_dump:
        return set()
    try:
        return set(os.listdir(rec.hlo_dir))
    except FileNotFoundError:
        return set()


def _absorb(rec: Any, before: tuple[int, set[str] | None]) -> int:
    """Take what torch_xla reported for the fingerprint graph out of the recorder's view; the
    compile count after it."""
    s = rec.s
    data = rec.debug.read()
    if data:  # its analysis blocks: dropped. The same text every step: parsed once
        side = getattr(rec, "side", None)
        seen = getattr(side, "debug_seen", (None, ""))
        if seen[0] == (s.carry, data):
            s.carry = seen[1]
        else:
            key = (s.carry, data)
            _, s.carry = parse_pt_xla_debug(s.carry + decode(data))
            if side is not None:
                side.debug_seen = (key, s.carry)
    compiles, _ = rec._counters()
    count = rec._compile_metric()[0]
    new_compiles = count - before[0]
    # One execution is this graph's, whenever the (lagging) execution counter shows it.
    rec.base = (rec.base[0], rec.base[1] + 1, rec.base[2] + new_compiles)
    s.compiles, s.executes = compiles, s.executes + 1
    if new_compiles:
        side = getattr(rec, "side", None)
        if side is not None:
            side.side_compiles += new_compiles
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
