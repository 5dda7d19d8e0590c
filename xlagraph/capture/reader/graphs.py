"""One graph's record of the journal as a `GraphRecord`: its dump (or the one with the source lines
merged in), its live tensors and what held them.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from xlagraph.errors import InputError, XlagraphError
from xlagraph.parse.compressed import compressed_twin
from xlagraph.parse.input_files import read_bytes
from xlagraph.parse.shared import current as current_shared
from xlagraph.parse.tensors_report import parse_tensors_report
from xlagraph.runlog import GraphRecord, Holder, LiveTensor
from xlagraph.source_paths import portable_path


def graph_record(p: Path, g: dict[str, Any], notes: list[str]) -> GraphRecord:
    module = compressed_twin(str(p / g["module"])) if g.get("module") else ""  # stored as .xz too
    if module and not os.path.isfile(module):  # a FIFO or device there is never opened
        notes.append(f"{g['module']}: listed in the journal but missing")
        module = ""
    if module and g.get("lines_module"):
        module = _with_lines(p, g, module, notes)
    elif g.get("lines_off"):
        why = g.get("lines_note") or (
            f"lowered at step {g['lines_step']}, not merged: the process did not exit cleanly"
            if "lines_step" in g
            else ""
        )
        notes.append(
            f"graph {g['hash']} (step {g.get('step', '?')}) was compiled while source lines were off "
            "and its lines were not recovered: its own instructions cite no line of yours"
            + (f" ({why})" if why else "")
        )
    tensors: tuple = ()
    tensors_note = str(g.get("tensors_note", ""))
    if g.get("tensors"):
        try:
            path = compressed_twin(str(p / g["tensors"]))
            shared = current_shared()  # the ranks of a pod hold the same reports
            tensors = shared.parsed("tensors", path, _read_tensors) if shared else _read_tensors(path)
        except InputError as e:
            tensors_note = f"{g['tensors']}: unreadable: {e.message}"
    elif not tensors_note and not g.get("compiled"):
        tensors_note = "compiled before capture started"
    if g.get("holders"):
        tensors = _with_holders(p, str(g["holders"]), tensors, notes)
    return GraphRecord(graph_hash=str(g["hash"]), module=module, tensors=tensors, tensors_note=tensors_note)


def _read_tensors(path: str) -> tuple[LiveTensor, ...]:
    return parse_tensors_report(read_bytes(path).decode("utf-8", errors="replace"))


_HOLDER_TEXT = ("path", "name", "kind", "function", "file")


def _with_holders(
    p: Path, name: str, tensors: tuple[LiveTensor, ...], notes: list[str]
) -> tuple[LiveTensor, ...]:
    """The live tensors with what kept each alive (`capture/_holders.py`), where recorded. An
    unreadable file costs the holders only, with a note; an entry of the wrong form is skipped."""
    try:
        records = json.loads(read_bytes(compressed_twin(str(p / name))).decode("utf-8", errors="replace"))
    except (InputError, ValueError, RecursionError) as e:
        notes.append(f"{name}: unreadable: {getattr(e, 'message', type(e).__name__)}")
        return tensors
    if not isinstance(records, list):
        notes.append(f"{name}: unreadable: not a list")
        return tensors
    by_id: dict[int, list[Holder]] = {}
    shapes: dict[int, object] = {}
    pending: set[int] = set()
    for r in records:
        if (
            isinstance(r, dict)
            and isinstance(r.get("id"), int)
            and all(isinstance(r.get(k), str) for k in _HOLDER_TEXT)
            and isinstance(r.get("line"), int)
        ):
            shapes.setdefault(r["id"], r.get("shape"))
            if r.get("pending") is True:
                pending.add(r["id"])
            by_id.setdefault(r["id"], []).append(
                Holder(
                    r["path"],
                    r["name"],
                    r["kind"],
                    r["function"],
                    portable_path(r["file"]),
                    r["line"],
                    portable_path(r["owner_file"]) if isinstance(r.get("owner_file"), str) else "",
                ),
            )
    if not by_id:
        return tensors
    if not tensors:  # no report at that step (too costly): the outputs-to-be the holders saw
        return tuple(
            LiveTensor(tid, shape, "", 1, (), tuple(hs), True)
            for tid, hs in by_id.items()
            if isinstance(shape := shapes.get(tid), str) and tid in pending
        )
    return tuple(
        replace(t, holders=tuple(by_id[t.id]), pending=t.id in pending) if t.id in by_id else t
        for t in tensors
    )


def _with_lines(p: Path, g: dict[str, Any], module: str, notes: list[str]) -> str:
    """The compiled dump of a graph compiled while source lines were off, with the lines capture
    merged in from a later run of it (`capture/lines.py`). Used in place of the dump only when
    xlagraph reads both as the same computation: a line is never bought with a changed graph."""
    from xlagraph.canonical import canonicalize
    from xlagraph.parse.sources import load_module

    lines = compressed_twin(str(p / g["lines_module"]))
    label = f"graph {g['hash']} (step {g.get('step', '?')})"
    try:
        if os.path.isfile(lines) and (
            canonicalize(load_module(lines)).fingerprint == canonicalize(load_module(module)).fingerprint
        ):
            notes.append(
                f"{label} was compiled while source lines were off; its lines come from its run at "
                f"step {g.get('lines_step', '?')}"
            )
            return lines
        why = "missing" if not os.path.isfile(lines) else "not the same graph"
    except InputError as e:
        why = f"unreadable: {e.message}"
    except (XlagraphError, RecursionError) as e:
        why = f"unreadable: {type(e).__name__}"
    notes.append(f"{label} was compiled while source lines were off; {g['lines_module']} {why}: not used")
    return module
