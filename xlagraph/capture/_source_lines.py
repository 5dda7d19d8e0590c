"""Source lines in auto mode (XLAGRAPH_SOURCE_LINES=auto, the default).

torch_xla records the user's source line of every IR node while it traces, at the cost of a Python
stack walk per node, every step (+50% on a short CPU step). The lines are needed only for graphs
that compile, so they go off once the run is steady and come back after each compile (torch_xla's
graph hash ignores them). A graph that compiles while they are off gets them from its next run at
a step marker: that run's pending graph is lowered, with lines, just before the marker, and merged
onto the compiled dump at exit.
"""

from __future__ import annotations

import gc
import os
import warnings
import weakref
from typing import TYPE_CHECKING, Any

from xlagraph.capture import files as fmt
from xlagraph.capture._dumps import unlink
from xlagraph.parse.pt_xla_debug import Execution

if TYPE_CHECKING:
    from xlagraph.capture._host import Host

__all__ = [
    "AWAIT_MARKERS",
    "MAX_LINE_PROBES",
    "adapt_source_lines",
    "await_lines",
    "lines_auto_supported",
    "merge_source_lines",
    "probe_lines",
    "resolve_probe",
]

AWAIT_MARKERS = 1000  # a graph compiled while they were off: markers they stay on waiting for its rerun
MAX_LINE_PROBES = 8  # lowerings of the live tensors per wait (each ~0.1 - 0.3 s: a scan of the heap)


def lines_auto_supported(source_lines_mode: str, xlac: Any) -> bool:
    """Auto mode, when this torch_xla can switch lines off, hash a pending graph and lower it."""
    return source_lines_mode == "auto" and all(
        hasattr(xlac, f) for f in ("_set_ir_debug", "_get_graph_hash", "_get_xla_tensors_hlo")
    )


def adapt_source_lines(rec: Host) -> None:
    """Auto mode, after a step: lines on right after a compile and while a graph compiled
    without them waits for its rerun; off once the run is steady."""
    s, steady = rec.s, rec.settings.steady_markers
    for graph_hash, began in list(s.awaiting.items()):
        if s.markers - began >= AWAIT_MARKERS or s.line_probes >= MAX_LINE_PROBES:
            del s.awaiting[graph_hash]
            why = (
                f"not run again within {AWAIT_MARKERS} steps"
                if s.markers - began >= AWAIT_MARKERS
                else f"not told apart from other graphs in {MAX_LINE_PROBES} lowerings"
            )
            rec.note(f"graph {graph_hash}: no source lines recovered ({why})")
    if not s.awaiting:
        s.tracked, s.probe_seen, s.line_probes = [], {}, 0
    if (s.last_compile_marker == s.markers or s.awaiting) and not s.lines_on:
        rec.xlac._set_ir_debug(True)
        s.lines_on = True
    elif s.lines_on and not s.awaiting and s.markers - s.last_compile_marker >= steady:
        rec.xlac._set_ir_debug(False)
        s.lines_on = False
        s.lines_off_count += 1
        if s.lines_off_count == 1:
            rec.note(
                f"source lines off from step {s.step} (no compile in {steady} steps), back on "
                "after each compile; a graph first compiled while they are off gets them from its "
                "next run at a step marker (XLAGRAPH_SOURCE_LINES=always keeps them on, at the cost "
                "of a slower step)"
            )


def probe_lines(rec: Host) -> None:
    """Before a marker, while graphs compiled without source lines wait for a rerun: when the
    pending graph may be one of them, lower it (with the lines it was traced with) so that
    `resolve_probe` can keep it. The pending graph is predicted by the graph hash of tensors
    that outlive steps (parameters, optimizer state), found once by a scan of the heap; the
    sync graph each such hash became is learnt as the run goes, so a stable step costs one
    hash (about 1 ms) and only an unseen one pays the scan and the lowering."""
    s = rec.s
    if s.line_probes >= MAX_LINE_PROBES:
        return
    try:
        tracked = [t for t in (r() for r in s.tracked) if t is not None]
        key = _pending_hash(rec.xlac, tracked) if tracked else None
        if key is not None and key in s.probe_seen:
            s.probe = (key, None)
            return
        tensors = _pending_xla_tensors(rec.xlac)
        if not tracked:
            s.tracked = [weakref.ref(t) for t in tensors]
            key = _pending_hash(rec.xlac, tensors)
        s.line_probes += 1
        text = rec.xlac._get_xla_tensors_hlo(tensors) if tensors else ""
    except Exception as e:  # lines are a bonus: never a reason to stop capturing
        rec.note(f"source lines of late graphs not recovered: {type(e).__name__}: {e}")
        s.awaiting.clear()
        return
    s.probe = (key or b"", text)


def _pending_hash(xlac: Any, tensors: list[Any]) -> bytes:
    return bytes(xlac._get_graph_hash(tensors))


def resolve_probe(rec: Host, own: list[Execution]) -> None:
    """After the marker: the graph a probe's lowering was. An awaited graph rerun from the
    cache keeps that lowering; `finish` copies its lines onto the compiled dump."""
    s = rec.s
    probe, s.probe = s.probe, None
    if probe is None or len(own) != 1:
        return
    key, text = probe
    ex = own[0]
    if text is None:
        if ex.graph_hash in s.awaiting and not ex.compiled:  # it reran, predicted as another graph
            del s.awaiting[ex.graph_hash]
            rec.note(
                f"graph {ex.graph_hash}: no source lines recovered (its rerun at step {s.step - 1} "
                "was not told apart from other graphs by the parameters' pending graph)"
            )
        return
    if len(s.probe_seen) >= 256:
        s.probe_seen.clear()
    s.probe_seen[key] = ex.graph_hash
    if ex.compiled or ex.graph_hash not in s.awaiting or "source_file=" not in text:
        return
    del s.awaiting[ex.graph_hash]
    graph = s.graphs[ex.graph_hash]
    if not graph.has_module:
        rec.update(graph, lines_note="its compiled HLO was not kept")
    elif rec.fits(len(text)):
        path = os.path.join(rec.dir, fmt.LINES_DIR, f"{ex.graph_hash}{fmt.LOWERED_SUFFIX}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        s.stored_bytes += len(text)
        s.lowered.append(graph)
        rec.update(graph, lines_step=s.step - 1)
    else:
        rec.update(graph, lines_note=rec.cap_reason("HLO with source lines"))


def merge_source_lines(rec: Host) -> None:
    """At exit (not while training: it parses both modules): the compiled dump of each graph
    whose rerun was lowered, with that lowering's source lines, as `lines/<hash>.txt`."""
    from xlagraph.capture.lines import merge_lines  # (loads the HLO parser: needed at exit only)

    for graph in rec.s.lowered:
        lowered = os.path.join(rec.dir, fmt.LINES_DIR, f"{graph.record['hash']}{fmt.LOWERED_SUFFIX}")
        compiled = os.path.join(rec.dir, graph.record["module"])
        try:
            with open(compiled, encoding="utf-8") as f, open(lowered, encoding="utf-8") as g:
                text, count = merge_lines(f.read(), g.read(), compiled, lowered)
        except Exception as e:  # (OSError, InputError, anything the engine raises): lines are a bonus
            rec.update(graph, lines_note=f"lines not merged: {type(e).__name__}: {e}")
            continue
        name = f"{graph.record['hash']}.txt"
        with open(os.path.join(rec.dir, fmt.LINES_DIR, name), "w", encoding="utf-8") as f:
            f.write(text)
        unlink(lowered)
        rec.update(graph, lines_module=f"{fmt.LINES_DIR}/{name}", lines_count=count)


def await_lines(rec: Host, graph_hash: str) -> None:
    """A graph compiled while lines were off, at a marker: keep lines on until its rerun is lowered."""
    s = rec.s
    s.awaiting.setdefault(graph_hash, s.markers)
    s.late_notes += 1
    if s.late_notes <= 20:
        rec.note(
            f"graph {graph_hash} compiled at step {s.step} while source lines were off: source lines "
            f"on until it runs again at a step marker (at most {AWAIT_MARKERS} steps)"
        )


def _pending_xla_tensors(xlac: Any) -> list[Any]:
    """The torch_xla tensors with pending work that the interpreter holds, once each: a scan of
    the heap (0.1 - 0.3 s), plus the gradients and view bases only C++ refers to."""
    import torch  # imported by torch_xla already

    kinds = (torch.Tensor, torch.nn.Parameter)
    found = [obj for obj in gc.get_objects() if type(obj) in kinds and obj.device.type == "xla"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found += [obj.grad for obj in found if obj.is_leaf and obj.grad is not None]
    found += [obj._base for obj in found if obj._base is not None]  # (a view's base is never a view)
    seen: set[int] = set()
    unique = []
    for t in found:
        tid = int(xlac._xla_get_tensor_id(t))
        if tid not in seen:
            seen.add(tid)
            unique.append(t)
    need = xlac._check_tensor_need_materialization(unique) if unique else []
    return [t for t, pending in zip(unique, need, strict=True) if pending]
