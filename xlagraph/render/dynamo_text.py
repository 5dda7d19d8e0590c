"""Plain text of torch.compile's half of a report (`report/dynamo.py`): each recompile in dynamo's
terms and the user's words first, with dynamo's own text, the XLA graphs it added and its cost; then
graph breaks, then the cost per call site. The report's XLA recompiles follow, each saying which
torch.compile recompile made it."""

from __future__ import annotations

from xlagraph.render.text import _wrap, plural
from xlagraph.report.model import DynamoEvent, DynamoSection
from xlagraph.source_paths import short_location

__all__ = ["dynamo_lines", "dynamo_origin"]

_MAX_OLDER = 3


def _field(name: str, text: str, indent: str = "  ") -> list[str]:
    return _wrap(text, f"{indent}{name:<7} ", indent + " " * 8)


def _seconds(e: DynamoEvent) -> str:
    xla = f" + {e.xla_seconds:.2f} s XLA compile" if e.xla_seconds else ""
    return f"{e.seconds:.2f} s dynamo trace and backend compile{xla}"


def _event(e: DynamoEvent, k: int, total: int) -> list[str]:
    label = "gave up" if e.kind == "cache_limit" else f"recompile {k}/{total}"
    step = f" at step {e.step}" if e.step is not None else ""
    lines = _wrap(f"torch.compile {label} ({e.compile_id}){step}: {e.summary}", "", "    ")
    if e.guards:
        g = e.guards[0]
        lines += _field("dynamo", g.text)
        if g.origin:
            lines += _field("made", f"{short_location(g.origin)}  {g.origin_source}".rstrip())
        if g.at:
            lines += _field("at", f"{short_location(g.at)}  {g.source}".rstrip())
        older = [f"{x.entry}: {x.phrase}" for x in e.guards[1 : 1 + _MAX_OLDER]]
        if older:
            more = f" and {len(e.guards) - 1 - _MAX_OLDER} more" if len(e.guards) - 1 > _MAX_OLDER else ""
            lines += _field("older", "the earlier compiles fail too: " + "; ".join(older) + more)
    if e.failure:
        lines += _field("dynamo", e.failure)
    if e.call_site:
        lines += _field("called", short_location(e.call_site))
    if e.variants:
        lines += _field("xla", f"graphs {', '.join(e.variants)} compiled for it (their diffs below)")
    lines += _field("cost", _seconds(e))
    if e.expected:
        lines += _field("fix", "expected: each mode is compiled once; nothing to do unless it compiles again")
    elif e.fix:
        lines += _field("fix", e.fix)
    return lines


def dynamo_lines(d: DynamoSection) -> list[str]:
    breaks = sum(b.compiles for b in d.graph_breaks)
    head = (
        f"torch.compile: {plural(d.frames, 'frame')} compiled {plural(d.compiles, 'time')} "
        f"({plural(len(d.recompiles), 'recompile')}), {d.seconds:.2f} s in dynamo and the backend"
        + (
            f"; {plural(len(d.graph_breaks), 'graph break')} ({plural(breaks, 'compile')} hit one)"
            if breaks
            else ""
        )
    )
    lines = _wrap(head, "", "  ")
    for k, e in enumerate(d.recompiles, 1):
        lines += ["", *_event(e, k, len(d.recompiles))]
    if d.graph_breaks:
        per = next((b.graphs_per_step for b in d.graph_breaks if b.graphs_per_step), None)
        runs = f"; a step runs {plural(per, 'XLA graph')}" if per else ""
        lines += [
            "",
            f"graph breaks (each splits the compiled function into graphs compiled and run apart{runs}):",
        ]
        for b in d.graph_breaks:
            lines += _wrap(
                f"{b.reason} at {short_location(b.at)} ({plural(b.compiles, 'compile')})", "  - ", "    "
            )
            if b.explanation:
                lines += _field("why", b.explanation, "    ")
            lines += _field("fix", b.fix, "    ")
    if d.recompiles:
        sites = "; ".join(
            f"{short_location(r.key)}: {plural(r.compiles, 'compile')}, {r.seconds:.2f} s"
            for r in d.by_call_site[:5]
        )
        lines += ["", *_wrap(f"torch.compile cost by call site, costliest first: {sites}", "", "  ")]
    for note in d.notes:
        lines += _wrap(note, "note: ", "  ")
    return lines


def dynamo_origin(compile_id: str, d: DynamoSection | None) -> str:
    """What an XLA recompile's `from` line says: the torch.compile compile that made its graph."""
    if not compile_id or d is None:
        return ""
    e = next((x for x in d.events if x.compile_id == compile_id), None)
    if e is None:
        return ""
    why = f": {e.guards[0].phrase}" if e.guards and e.kind != "first" else ""
    what = "recompile" if e.kind != "first" else "first compile"
    return f"torch.compile {what} {e.compile_id} of `{e.function}`{why}"
