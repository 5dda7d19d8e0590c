"""torch's structured trace (`TORCH_TRACE=DIR`, what tlparse reads; a capture's `torch_trace.log`)
read into a `DynamoLog`: each frame dynamo compiled, its guard failures and graph breaks.

The format: one record per line, `V1125 05:46:34.830000 4132 torch/_dynamo/convert_frame.py:249]
{json}`, then the record's payload, if any, on lines that start with a tab. The JSON names one event
(`dynamo_start`, `compilation_metrics`, `artifact`, `str`, ...) beside the compile it belongs to
(`frame_id`, `frame_compile_id`, `attempt`). File names are interned: `{"str": [path, index]}`
gives the path a stack's `"filename": index` means. Events this reader does not use are skipped, so
a trace of any torch version 2.5 - 2.9 reads, and so does one of a later torch that adds events.

A file with no record at all is not a trace: `InputError`. A last record cut by a run that was
killed or is still writing is dropped with a note; a malformed record in the middle is skipped and
counted in a note.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from xlagraph.dynamolog import DynamoCompile, DynamoLog, GraphBreak
from xlagraph.errors import InputError
from xlagraph.ir import Frame
from xlagraph.source_paths import portable_path

__all__ = ["TRACE_FILE", "is_torch_trace", "read_torch_trace", "read_torch_trace_dir", "trace_files"]

TRACE_FILE = re.compile(r"^dedicated_log_torch_trace_.*\.log$|^torch_trace\.log$")
_HEAD = re.compile(r"^[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]]*\] (\{.*)$")
_BREAK_AT = re.compile(r"\bat (.+?):(\d+)\s*$")
_TRACEBACK = re.compile(r'^\s*File "(.+?)", line (\d+), in (.+?)\s*$')
_MAX_BYTES = 512 << 20  # a trace past this is not read whole: its first part, with a note


def is_torch_trace(path: str) -> bool:
    """A TORCH_TRACE file, or a folder holding one (and no capture: that is read as a capture)."""
    if os.path.isdir(path):
        return bool(trace_files(path))
    if not os.path.isfile(path):  # a FIFO or device is never opened here (it could block)
        return False
    if not TRACE_FILE.match(os.path.basename(path)):
        try:
            with open(path, "rb") as f:
                head = f.read(4096)  # bounded: a huge file without newlines is not read whole
        except OSError:
            return False
        return bool(_HEAD.match(head.split(b"\n", 1)[0].decode("utf-8", "replace")))
    return True


def trace_files(folder: str) -> list[str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [
        os.path.join(folder, n)
        for n in names
        if TRACE_FILE.match(n) and os.path.isfile(os.path.join(folder, n))
    ]


def read_torch_trace_dir(folder: str) -> list[DynamoLog]:
    """One `DynamoLog` per trace file (torch writes one per process, or per rank)."""
    files = trace_files(folder)
    if not files:
        raise InputError(folder, "no torch structured trace here (dedicated_log_torch_trace_*.log)")
    return [read_torch_trace(f) for f in files]


@dataclass
class _Acc:
    strings: dict[int, str] = field(default_factory=dict)
    starts: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    metrics: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    backward: dict[str, float] = field(default_factory=dict)
    reasons: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    breaks: dict[tuple[int, int], list[GraphBreak]] = field(default_factory=dict)
    order: list[tuple[int, int]] = field(default_factory=list)
    bad: int = 0
    first_bad: int = 0
    notes: list[str] = field(default_factory=list)


def read_torch_trace(path: str) -> DynamoLog:
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_BYTES + 1)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    acc = _Acc()
    if len(data) > _MAX_BYTES:
        data = data[:_MAX_BYTES]
        acc.notes.append(f"only the first {_MAX_BYTES >> 20} MB of the trace were read")
    if b"\0" in data[:4096]:
        raise InputError(path, "binary file, not a torch structured trace (TORCH_TRACE) log")
    text = data.decode("utf-8", "replace")
    records = 0
    for lineno, meta, payload in _records(text, acc):
        records += 1
        _event(meta, payload, acc, lineno)
    if records == 0:
        raise InputError(path, "not a torch structured trace (TORCH_TRACE) log: no record line", line=1)
    if acc.bad:
        acc.notes.append(f"{acc.bad} malformed trace record(s) skipped (first at line {acc.first_bad})")
    return DynamoLog(source=path, compiles=_compiles(acc), notes=tuple(acc.notes))


def _records(text: str, acc: _Acc) -> Iterator[tuple[int, dict[str, Any], str | None]]:
    lines = text.split("\n")
    last = len(lines) - 1 if lines and lines[-1] == "" else len(lines)
    i = 0
    while i < last:
        line = lines[i]
        start = i + 1
        i += 1
        m = _HEAD.match(line)
        if m is None:
            if line.strip():
                acc.bad += 1
                acc.first_bad = acc.first_bad or start
            continue
        payload: list[str] = []
        while i < last and lines[i].startswith("\t"):
            payload.append(lines[i][1:])
            i += 1
        try:
            meta = json.loads(m.group(1))
        except ValueError:
            if i >= last:  # the last record, cut short: a run killed or still writing
                acc.notes.append(f"the last trace record (line {start}) was cut short: ignored")
            else:
                acc.bad += 1
                acc.first_bad = acc.first_bad or start
            continue
        if isinstance(meta, dict):
            yield start, meta, "\n".join(payload) if payload else None


def _int(v: Any, default: int = -1) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _num(v: Any) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _event(meta: dict[str, Any], payload: str | None, acc: _Acc, lineno: int) -> None:
    key = (_int(meta.get("frame_id")), _int(meta.get("frame_compile_id")))
    place = meta.get("xlagraph") if isinstance(meta.get("xlagraph"), dict) else {}
    if "xlagraph_truncated" in meta:
        acc.notes.append(
            "the capture's dynamo record reached its size limit (XLAGRAPH_TRACE_MB): "
            "later compiles are missing"
        )
    elif "str" in meta:
        entry = meta["str"]
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str):
            acc.strings[_int(entry[1])] = entry[0]
    elif "dynamo_start" in meta and key[0] >= 0:
        if key not in acc.starts:
            acc.order.append(key)
            acc.starts[key] = {**(meta["dynamo_start"] or {}), "_place": place}
    elif "compilation_metrics" in meta and isinstance(meta["compilation_metrics"], dict):
        m = meta["compilation_metrics"]
        if key[0] < 0:
            key = _key_of(_str(m.get("compile_id")))
        if key[0] < 0:
            return
        if key not in acc.starts:
            acc.order.append(key)
            acc.starts[key] = {"_place": {}}
        acc.metrics[key] = {**m, "_place": place}
    elif "bwd_compilation_metrics" in meta and isinstance(meta["bwd_compilation_metrics"], dict):
        m = meta["bwd_compilation_metrics"]
        cid = _str(m.get("compile_id"))
        acc.backward[cid] = acc.backward.get(cid, 0.0) + _num(m.get("inductor_compile_time_s"))
    elif "artifact" in meta and isinstance(meta["artifact"], dict) and payload is not None:
        name = meta["artifact"].get("name")
        if name == "recompile_reasons":
            acc.reasons[key] = _reasons(payload)
        elif name == "dynamo_graph_break_reason":
            brk = _graph_break(payload, key)
            known = acc.breaks.setdefault(key, [])
            if all((b.file, b.line, b.reason) != (brk.file, brk.line, brk.reason) for b in known):
                known.append(brk)


def _key_of(compile_id: str) -> tuple[int, int]:
    parts = compile_id.lstrip("!").split("/")
    try:
        return int(parts[-2]), int(parts[-1])
    except (ValueError, IndexError):
        return -1, -1


def _reasons(payload: str) -> list[str]:
    try:
        value = json.loads(payload)
    except ValueError:
        return [line.strip() for line in payload.splitlines() if line.strip() not in ("", "[", "]")]
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def _graph_break(payload: str, key: tuple[int, int]) -> GraphBreak:
    lines = payload.split("\n")
    file, line = "", 0
    m = _BREAK_AT.search(lines[0]) if lines else None
    if m:
        file, line = portable_path(m.group(1)), int(m.group(2))
    reason, explanation = "", ""
    stack: list[Frame] = []
    in_tb = False
    for text in lines:
        s = text.strip()
        if s.startswith("Graph Break Reason:"):
            reason = s.removeprefix("Graph Break Reason:").strip()
        elif s.startswith("Explanation:") and not explanation:
            explanation = s.removeprefix("Explanation:").strip()
        elif s.startswith("User code traceback:"):
            in_tb = True
        elif in_tb and (tb := _TRACEBACK.match(text)):
            stack.append(Frame(tb.group(3), portable_path(tb.group(1)), int(tb.group(2))))
    if not reason:  # older torch: "Graph break: <reason> from user code at ..."
        reason = lines[0].split(" from user code")[0].removeprefix("Graph break:").strip() if lines else ""
    if not file and stack:
        file, line = stack[-1].file, stack[-1].line
    return GraphBreak(
        compile_id=f"{key[0]}/{key[1]}",
        reason=reason,
        file=file,
        line=line,
        explanation=explanation,
        stack=tuple(reversed(stack)),
    )


def _compiles(acc: _Acc) -> tuple[DynamoCompile, ...]:
    out: list[DynamoCompile] = []
    for key in acc.order:
        start = acc.starts.get(key, {})
        m = acc.metrics.get(key, {})
        stack = [s for s in start.get("stack", []) or [] if isinstance(s, dict)]
        frames = tuple(
            Frame(
                _str(s.get("name")),
                portable_path(acc.strings.get(_int(s.get("filename")), "")),
                _int(s.get("line"), 0),
            )
            for s in stack
        )
        code = frames[-1] if frames else Frame("", "", 0)
        function = _str(m.get("co_name")) or code.function
        file = portable_path(_str(m.get("co_filename"))) or code.file
        line = _int(m.get("co_firstlineno"), 0) or code.line
        reasons = acc.reasons.get(key, [])
        if not reasons and _str(m.get("recompile_reason")):
            reasons = [_str(m["recompile_reason"])]
        cid = f"{key[0]}/{key[1]}"
        s_place, e_place = start.get("_place", {}), m.get("_place", {})
        caller = s_place.get("caller")
        stack_frames = tuple(reversed(frames[:-1]))
        if isinstance(caller, list) and len(caller) == 3 and isinstance(caller[1], int):
            # xlagraph's capture: the user's line that called it, which dynamo's stack may lack (a
            # function called in a loop of `main` shows `<module>` alone): the innermost user frame
            site = Frame(_str(caller[2]), portable_path(_str(caller[0])), caller[1])
            if site not in stack_frames:
                stack_frames = (site, *stack_frames)
        out.append(
            DynamoCompile(
                compile_id=cid,
                frame_id=key[0],
                frame_compile_id=key[1],
                function=function,
                file=file,
                line=line,
                call_stack=stack_frames,
                guard_failures=tuple(reasons),
                graph_breaks=tuple(acc.breaks.get(key, ())),
                seconds=_num(m.get("entire_frame_compile_time_s")),
                backend_seconds=_num(m.get("backend_compile_time_s")),
                graph_ops=m.get("graph_op_count") if isinstance(m.get("graph_op_count"), int) else None,
                graph_inputs=_opt_int(m.get("graph_input_count")),
                fail_type=_str(m.get("fail_type")),
                fail_reason=_str(m.get("fail_reason")),
                step=_opt_int(s_place.get("step")),
                t=_opt_num(s_place.get("t")),
                end_step=_opt_int(e_place.get("step")),
                backward_seconds=acc.backward.get(cid, 0.0),
            )
        )
    return tuple(out)


def _opt_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _opt_num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
