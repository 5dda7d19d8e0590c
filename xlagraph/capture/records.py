"""Validation of the capture folder's journal and meta records, field by field.

A capture folder is written by a process that may be killed at any moment, by a version of
xlagraph other than the reader, or edited by hand; the reader trusts nothing in it. Every record
kind has a table of the fields the reader uses: their type and range, and whether the record is
useless without them. A record that fails is skipped whole (the reader counts and names it in a
note); fields the reader does not use are left alone, so newer writers stay readable. File
references (`module`, `tensors`) must stay inside the process folder.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from xlagraph.capture import files as fmt

__all__ = ["MAX_INT", "check_meta", "check_record", "folder_path"]

MAX_INT = 1 << 53  # JSON numbers past this are not exact integers anywhere
Check = Callable[[Any], bool]


def _int(low: int = 0) -> Check:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v < MAX_INT


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < 1e15


def _seconds(v: Any) -> bool:
    return _number(v) and v >= 0


def _str(v: Any) -> bool:
    return isinstance(v, str) and len(v) < 1 << 20


def _bool_or_01(v: Any) -> bool:
    return isinstance(v, bool) or (isinstance(v, int) and v in (0, 1))


def _opt(check: Check) -> Check:
    return lambda v: v is None or check(v)


def folder_path(value: Any, under: str) -> bool:
    """A relative path inside `under/` of the process folder, with no `..`, no absolute part."""
    if not _str(value) or "\\" in value or "\0" in value:
        return False
    parts = value.split("/")
    return len(parts) == 2 and parts[0] == under and parts[1] not in ("", ".", "..")


def _frames(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(f, list) and len(f) >= 3 and _str(f[0]) and _str(f[1]) and _int()(f[2]) for f in v
    )


def _entries(v: Any) -> bool:
    """`[[graph id, compiled 0/1, cause id, frames id], ...]` of a step record."""
    return isinstance(v, list) and all(
        isinstance(e, list)
        and len(e) == 4
        and _int()(e[0])
        and _bool_or_01(e[1])
        and _int()(e[2])
        and _int()(e[3])
        for e in v
    )


def _seconds_list(v: Any) -> bool:
    return isinstance(v, list) and all(_seconds(x) for x in v)


def _eager_ops(v: Any) -> bool:
    """`[[module or "", seconds], ...]`: eager mode's op compiles of a step."""
    return isinstance(v, list) and all(
        isinstance(e, list)
        and len(e) == 2
        and (e[0] == "" or folder_path(e[0], fmt.HLO_DIR))
        and _seconds(e[1])
        for e in v
    )


# kind -> {field: (check, required)}
_SCHEMA: dict[str, dict[str, tuple[Check, bool]]] = {
    fmt.START: {
        "t": (_seconds, False),
        "pid": (_int(), False),
        "compiles": (_int(), False),
        "executions": (_int(), False),
    },
    fmt.FRAMES: {"id": (_int(), True), "v": (_frames, True)},
    fmt.CAUSE: {"id": (_int(), True), "v": (_str, True)},
    fmt.GRAPH: {
        "id": (_int(), True),
        "hash": (_str, False),
        "in": (_int(), False),
        "out": (_int(), False),
        "step": (_int(), False),
        "compiled": (_bool_or_01, False),
        "module": (lambda v: folder_path(v, fmt.HLO_DIR), False),
        "tensors": (lambda v: folder_path(v, fmt.TENSORS_DIR), False),
        "tensors_note": (_str, False),
        "holders": (lambda v: folder_path(v, fmt.TENSORS_DIR), False),
        "module_note": (_str, False),
        "lines_module": (lambda v: folder_path(v, fmt.LINES_DIR), False),
        "lines_step": (_int(), False),
        "lines_count": (_int(), False),
        "lines_off": (_bool_or_01, False),
        "lines_note": (_str, False),
    },
    fmt.STEP: {
        "i": (_int(), True),
        "t0": (_seconds, False),
        "t1": (_seconds, False),
        "c": (_int(), False),
        "x": (_int(), False),
        "e": (_entries, False),
        "cs": (_seconds_list, False),
        "o": (_int(), False),
        "eo": (_eager_ops, False),
        "call": (_bool_or_01, False),
    },
    fmt.NOTE: {"v": (_str, True)},
    fmt.END: {
        "t": (_seconds, False),
        "compiles": (_int(), False),
        "executions": (_int(), False),
        "eager_compiles": (_int(), False),
    },
    fmt.RANK: {"rank": (_opt(_int()), False), "world": (_opt(_int(1)), False)},
}

_META: dict[str, Check] = {
    "debug_level": _int(),
    "rank": _opt(_int()),
    "world_size": _opt(_int(1)),
    "notes": lambda v: isinstance(v, list) and all(_str(n) for n in v),
    "start_time": _seconds,
    "end_time": _seconds,
    "pid": _int(),
    "host": _str,
    "start_iso": _str,
    "cwd": _str,
    "import_roots": lambda v: isinstance(v, list) and all(_str(n) for n in v),
    "compiled_calls": _int(),
    "compiled_call_sites": lambda v: isinstance(v, list),
}


def check_record(record: Any) -> str:
    """Why `record` (one parsed journal line) cannot be used, or "" when it can. Kinds this
    reader does not know (written by a newer xlagraph, or read by another module) are usable."""
    if not isinstance(record, dict):
        return f"not a JSON object but {type(record).__name__}"
    kind = record.get("k")
    if not isinstance(kind, str):
        return 'no record kind ("k")'
    schema = _SCHEMA.get(kind)
    if schema is None:
        return ""
    for name, (check, required) in schema.items():
        if name not in record:
            if required:
                return f"{kind} record without {name!r}"
            continue
        if not check(record[name]):
            return f"{kind} record with a bad {name!r}: {_show(record[name])}"
    if kind == fmt.STEP and "t0" in record and "t1" in record and record["t1"] < record["t0"]:
        return "step record ending before it starts"
    return ""


def check_meta(meta: Any) -> tuple[dict[str, Any], list[str]]:
    """The usable part of `meta.json` and what was dropped from it, one line per field."""
    if not isinstance(meta, dict):
        return {}, [f"{fmt.META} is not a JSON object; ignored"]
    good: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in meta.items():
        check = _META.get(key)
        if check is not None and not check(value):
            dropped.append(f"{fmt.META}: bad {key!r} ({_show(value)}); ignored")
            continue
        good[key] = value
    return good, dropped


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
