"""What `watch` prints for an event (`report/watch.py`): one line of text in the report's words, or
one JSON object (`--json`): the report's recompile schema with `event`, `process`, `step` and
`expected` beside it."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from xlagraph.render.report_json import recompile_to_json
from xlagraph.report.model import DynamoEvent, EagerStep, Recompile
from xlagraph.report.watch import WatchEvent
from xlagraph.source_paths import short_location, short_locations_in

__all__ = ["WATCH_SCHEMA", "event_json", "event_line"]

WATCH_SCHEMA = "xlagraph.watch/1"


def event_line(e: WatchEvent) -> str:
    head = f"{e.process}: " + (f"step {e.step}: " if e.step is not None and e.kind != "end" else "")
    s = e.subject
    if isinstance(s, Recompile):
        return head + _recompile(s)
    if isinstance(s, DynamoEvent):
        return head + _dynamo(s)
    if isinstance(s, EagerStep):
        fix = e.detail.get("fix", "")
        tail = " (expected: nothing to fix)" if e.expected else (f"; fix: {fix}" if fix else "")
        return head + short_locations_in(s.summary) + tail
    d = e.detail
    if e.kind == "steady":
        graphs = d.get("variants", [])
        return f"{head}steady (graph{'s' if len(graphs) != 1 else ''} {', '.join(graphs)})"
    if e.kind == "ranks":
        where = short_location(d.get("call_site", "")) or "no call site"
        return f"{head}compiled graph {d['variant']} that {', '.join(d['not_in'])} did not ({where})"
    if e.kind == "end":
        return f"{head}ended after {d.get('steps')} step(s), {d.get('compiles')} graph(s) compiled"
    return head + e.kind


def _recompile(r: Recompile) -> str:
    head = f"graph {r.variant} compiled" + (f" (torch.compile {r.dynamo})" if r.dynamo else "")
    if not r.causes:
        return f"{head}: {short_locations_in(r.note or 'unexplained')}"
    c = r.causes[0]
    at = f" at {short_location(r.lines[0])}" if r.lines else ""
    tail = " (expected: nothing to fix)" if r.expected else f"; fix: {c.hint}"
    return f"{head}: {c.kind}: {short_locations_in(c.summary)}{at}{tail}"


def _dynamo(e: DynamoEvent) -> str:
    g = e.guards[0] if e.guards else None
    at = (g.origin or g.at) if g else ""
    line = short_locations_in(e.summary) + (f" at {short_location(at)}" if at else "")
    if e.expected:
        return line + " (expected: nothing to fix)"
    return line + (f"; fix: {e.fix}" if e.fix else "")


def event_json(e: WatchEvent) -> str:
    out: dict[str, Any] = {"schema": WATCH_SCHEMA, "event": e.kind, "process": e.process, "step": e.step}
    out["expected"] = e.expected
    s = e.subject
    if isinstance(s, Recompile):
        out["recompile"] = recompile_to_json(s)
    elif isinstance(s, DynamoEvent | EagerStep):
        out["torch.compile" if isinstance(s, DynamoEvent) else "eager"] = asdict(s)
    out.update(e.detail)
    out["text"] = event_line(e)
    return json.dumps(out, default=str)
