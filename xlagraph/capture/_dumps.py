"""torch_xla's `--xla_dump_to` folder, read as the run goes: each new before-optimizations module is
paired with the next compile the PT_XLA_DEBUG stream reported, in order; an after-optimizations
module is kept only for a graph SPMD partitioned; every other file XLA dumps is deleted at once.
"""

from __future__ import annotations

import os
from contextlib import suppress
from typing import TYPE_CHECKING

from xlagraph.capture import files as fmt

if TYPE_CHECKING:
    from xlagraph.capture._host import Host

__all__ = ["PARAMETER_WRAPPING", "scan_dumps", "unlink"]

PARAMETER_WRAPPING = 3200  # torch_xla tuples the parameters above this count (hlo-text-format.md 2.1)


def scan_dumps(rec: Host) -> None:
    """Pair new before_optimizations dumps with compiles, in order; delete the other files."""
    if not rec.plan.hlo_dump:
        return
    s = rec.s
    try:
        entries = list(os.scandir(rec.hlo_dir))
    except FileNotFoundError:
        return
    new = []
    for entry in entries:
        name = entry.name
        if name in s.dumps_seen:
            continue
        if name.endswith(fmt.BEFORE_SUFFIX):
            s.dumps_seen.add(name)
            new.append(name)
        elif name.endswith(fmt.AFTER_SUFFIX):  # kept for a partitioned (SPMD) graph
            _partitioned(rec, entry.path, name)
        else:  # buffer assignment, LLVM IR, object files: not needed
            unlink(entry.path)
    s.dump_queue.extend(sorted(new, key=fmt.dump_order))
    while s.dump_queue and s.compile_queue:
        name, (graph_hash, inputs) = s.dump_queue.pop(0), s.compile_queue.pop(0)
        graph = s.graphs[graph_hash]
        path = os.path.join(rec.hlo_dir, name)
        if graph.has_module:  # compiled again (cache eviction): the first copy is kept
            unlink(path)
            s.prefixes_done.add(name.removesuffix(fmt.BEFORE_SUFFIX))
            continue
        arity = _arity(path)
        if arity >= 0 and 0 <= inputs <= PARAMETER_WRAPPING and arity != inputs:
            # A compile with no execution record of its own (torch_xla compiles some op
            # lowerings, e.g. EmbeddingBag's backward, as graphs of their own): that dump is
            # not this graph's. Skip it and let the graph wait for the next one, or every
            # later graph would be paired with its predecessor's module.
            s.compile_queue.insert(0, (graph_hash, inputs))
            s.prefixes_done.add(name.removesuffix(fmt.BEFORE_SUFFIX))
            s.unpaired_dumps += 1
            unlink(path)
            continue
        if rec.fits(size := os.path.getsize(path)):
            s.stored_bytes += size
            graph.has_module = True
            rec.kept(path)
            update = {"module": f"{fmt.HLO_DIR}/{name}", "module_note": ""}
            if fmt.partitions(_first_line(path)) > 1:
                s.spmd_prefixes[name.removesuffix(fmt.BEFORE_SUFFIX)] = graph
        else:
            unlink(path)
            update = {"module_note": rec.cap_reason("HLO")}
        s.prefixes_done.add(name.removesuffix(fmt.BEFORE_SUFFIX))
        if inputs < 0 <= arity:  # a compile PT_XLA_DEBUG did not analyse: its module tells the count
            update["in"] = arity
        rec.update(graph, **update)
    for name in [n for n in s.after_waiting if fmt.dump_prefix(n) in s.prefixes_done]:
        s.after_waiting.remove(name)
        _partitioned(rec, os.path.join(rec.hlo_dir, name), name)


def _partitioned(rec: Host, path: str, name: str) -> None:
    """An after-optimizations dump: kept (as the graph's `partitioned` module) when its graph
    was partitioned by SPMD, where it shows the per-device shapes and the collectives the
    partitioner added; deleted otherwise. Waits while its before-optimizations twin is unpaired."""
    s = rec.s
    prefix = fmt.dump_prefix(name)
    graph = s.spmd_prefixes.pop(prefix, None)
    if graph is None:
        if prefix in s.prefixes_done:
            unlink(path)
        elif name not in s.after_waiting:
            s.after_waiting.append(name)
        return
    s.dumps_seen.add(name)
    if rec.fits(size := os.path.getsize(path)):
        s.stored_bytes += size
        rec.kept(path)
        rec.update(graph, partitioned=f"{fmt.HLO_DIR}/{name}")
    else:
        unlink(path)
        rec.update(graph, partitioned_note=rec.cap_reason("partitioned HLO"))


def _arity(path: str) -> int:
    line = _first_line(path)
    return fmt.layout_arity(line) if line else -1


def _first_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline(1 << 20)
    except OSError:
        return ""


def unlink(path: str) -> None:
    with suppress(OSError):
        os.unlink(path)
