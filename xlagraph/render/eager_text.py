"""Plain text of eager mode's half of a report (`report/eager.py`): the op compiles per step, then
each later step's ops compiled again for new shapes (with the shapes they compiled for before) or
new, the user's lines that made the changed inputs, the fix and the cost."""

from __future__ import annotations

from xlagraph.render.dynamo_text import _field
from xlagraph.render.text import _wrap
from xlagraph.report.model import EagerOp, EagerSection
from xlagraph.source_paths import short_location

__all__ = ["eager_lines"]

_MAX_OPS = 8  # ops listed per step; the rest are counted


def _op(o: EagerOp) -> str:
    was = f"  (was {o.was})" if o.was else ""
    at = f"  at {short_location(o.at)}" if o.at else ""
    return f"{o.op} {o.shapes}{was}{at}"


def eager_lines(e: EagerSection) -> list[str]:
    counted = f"torch_xla counted {e.reported}" if e.reported is not None else "no torch_xla count"
    per_step = ", ".join(
        f"step {step}: {n}" + (" (warm-up)" if step == e.first_step else "") for step, n in e.by_step[:8]
    )
    more = f", and {len(e.by_step) - 8} more steps" if len(e.by_step) > 8 else ""
    lines = _wrap(
        f"eager mode (each op compiled on its own): {e.compiles} op compile(s) ({counted}, "
        f"EagerOpCompileTime), {e.seconds:.2f} s; {per_step}{more}",
        "",
        "  ",
    )
    if e.unread:
        lines += _field("note", f"{e.unread} op compile(s) without their module (not kept): not named")
    for s in e.steps:
        lines += [
            "",
            *_wrap(
                f"eager {'recompile' if s.recompiled else 'new ops'} at step {s.step}: {s.summary}",
                "",
                "    ",
            ),
        ]
        if s.recompiled:
            lines += _ops(s.recompiled)
            if s.changes:
                lines += _field("changed", "dimension " + ", ".join(s.changes))
            lines += _field("fix", e.fix)
        if s.new:
            lines += _ops(s.new, "new")
        lines += _field("cost", f"{s.seconds:.2f} s compiling")
    return lines


def _ops(ops: tuple[EagerOp, ...], label: str = "ops") -> list[str]:
    lines = []
    for k, o in enumerate(ops[:_MAX_OPS]):
        lines += _field(label if k == 0 else "", _op(o))
    if len(ops) > _MAX_OPS:
        lines += _field("", f"... and {len(ops) - _MAX_OPS} more")
    return lines
