"""`xlagraph diverge --html OUT`: one self-contained page (templates/diverge.html): the verdict, the
first divergent tensors, and a step x tensor strip where the runs part. No script, no fetch."""

from __future__ import annotations

from xlagraph.diverge.model import DIFFERS, NAN, WITHIN, Divergence
from xlagraph.render.diverge_text import POINTS_AT, render_divergence_text
from xlagraph.render.html_common import _load, environment

__all__ = ["MAX_ROWS", "render_divergence_html"]

MAX_ROWS = 240  # tensor rows of the strip: those that differ in the window first, then the rest


def render_divergence_html(d: Divergence) -> str:
    env = environment()  # the pages' templates and settings
    keep = _rows(d)
    strip = [(step, [cells[i] for i in keep]) for step, cells in d.strip]
    return env.get_template("diverge.html").render(
        d=d,
        css=_load("xlagraph.css"),
        rows=[d.tensors[i] for i in keep],
        hidden=len(d.tensors) - len(keep),
        strip=strip,
        points_at=POINTS_AT.get(d.first[0].role, "") if d.first else "",
        text=render_divergence_text(d),
    )


def _rows(d: Divergence) -> list[int]:
    if len(d.tensors) <= MAX_ROWS:
        return list(range(len(d.tensors)))
    bad = {i for _, cells in d.strip for i, c in enumerate(cells) if c in (DIFFERS, NAN, WITHIN)}
    ordered = sorted(range(len(d.tensors)), key=lambda i: (i not in bad, i))
    return sorted(ordered[:MAX_ROWS])
