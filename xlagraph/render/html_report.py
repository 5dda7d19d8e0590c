"""The run page: per process, the syncs as an SVG strip coloured by graph variant with the compiles
marked, the recompiles ranked by compile time, and for each the diff partial of the diff page (ids
prefixed per recompile) with the live tensors implicated."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from xlagraph.diff import DiffResult
from xlagraph.render import html_diff
from xlagraph.render.html_common import CONTEXT_LINES, asset, element_id, environment, page_data
from xlagraph.render.html_diff_view import DiffView
from xlagraph.report.model import to_fix_first
from xlagraph.source_paths import short_location

__all__ = ["ReportPage", "RunView", "build_run_view", "render_report_html"]

# --- the run page ---------------------------------------------------------------------------------

PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b",
)  # fmt: skip
TIMELINE_WIDTH = 1000  # px the strip of syncs is drawn in (the SVG scales to the page)
MAX_SYNC_WIDTH = 36  # px of one sync at most
MAX_STEP_LABELS = 24
EXPLICIT_TRIGGERS = frozenset({"sync", "mark_step", "torch_xla.compile", "dynamo", "unknown"})


@dataclass(frozen=True)
class Strip:
    """Consecutive syncs of one variant drawn as one rectangle of the timeline."""

    x: float
    width: float
    color: str
    title: str
    implicit: bool


@dataclass(frozen=True)
class Mark:
    """A compile: a marker above the strip, linking to the recompile's section when it has one."""

    x: float
    title: str
    href: str
    first: bool


@dataclass(frozen=True)
class Timeline:
    width: float
    height: int
    strips: tuple[Strip, ...]
    marks: tuple[Mark, ...]
    steps: tuple[tuple[float, str], ...]  # (x, label) where a step starts
    steady_x: float | None
    swatches: tuple[tuple[str, str, str], ...]  # (letter, color, description)


@dataclass(frozen=True)
class TensorView:
    """A live tensor a cause is attributed to; `match` says how it was matched to the graph."""

    cause: str
    id: int
    shape: str
    line: str
    stack: str
    match: str
    held_by: str = ""
    stored_at: str = ""


@dataclass(frozen=True)
class RecompileView:
    id: str
    rank: int
    recompile: Any  # xlagraph.report.model.Recompile
    baseline: str
    cost: str
    stack: tuple[str, ...]
    attribution: tuple[Any, ...]  # xlagraph.report.model.Attribution
    tensors: tuple[TensorView, ...]
    diff: DiffView | None
    note: str
    expected: bool = False  # nothing to fix (warm-up): listed after what is


@dataclass(frozen=True)
class RunView:
    id: str
    report: Any  # xlagraph.report.model.RunReport
    timeline: Timeline
    recompiles: tuple[RecompileView, ...]  # ranked by cost
    timed: bool
    variant_ids: dict[str, str]  # a recompiled graph's letter -> its section (torch.compile's links)


@dataclass(frozen=True)
class ReportPage:
    """The context of `report.html`."""

    title: str
    runs: tuple[RunView, ...]
    css: Markup
    js: Markup
    data: Markup
    ranks: Any = None  # RanksHtml of a multi-process run (templates/_ranks.html)


def _timeline(report: Any, anchors: dict[int, str]) -> Timeline:
    entries = report.timeline
    colors = {v.letter: PALETTE[k % len(PALETTE)] for k, v in enumerate(report.variants)}
    programs = {r.sync for r in getattr(report, "first_compiles", ())}
    expected = {r.sync for r in report.recompiles if r.expected}
    n = max(len(entries), 1)
    cell = min(MAX_SYNC_WIDTH, TIMELINE_WIDTH / n)
    strips: list[Strip] = []
    marks: list[Mark] = []
    steps: list[tuple[float, str]] = []
    steady_x = None
    k = 0
    while k < len(entries):
        e = entries[k]
        end = k + 1
        implicit = e.trigger not in EXPLICIT_TRIGGERS
        while (
            not e.compiled
            and end < len(entries)
            and entries[end].variant == e.variant
            and not entries[end].compiled
            and (entries[end].trigger not in EXPLICIT_TRIGGERS) == implicit
        ):
            end += 1
        last = entries[end - 1]
        span = f"sync {e.sync}" if end - k == 1 else f"syncs {e.sync}–{last.sync}"
        steps_of = f"step {e.step}" if e.step == last.step else f"steps {e.step}–{last.step}"
        what = f"graph {e.variant}" + (" compiled" if e.compiled else f" ×{end - k}" if end - k > 1 else "")
        trigger = f", {e.trigger}" if implicit or e.compiled else ""
        site = f" at {short_location(e.call_site)}" if e.call_site else ""
        strips.append(
            Strip(
                k * cell,
                (end - k) * cell,
                colors.get(e.variant, PALETTE[0]),
                f"{span} ({steps_of}): {what}{trigger}{site}",
                implicit,
            )
        )
        if e.compiled:
            seconds = f", {e.compile_seconds:.2f} s" if e.compile_seconds else ""
            title = f"sync {e.sync}, step {e.step}: graph {e.variant} compiled{seconds}"
            href = "#" + anchors[e.sync] if e.sync in anchors else ""
            # Grey: a program's first compile (the run's first, or another program's), not a
            # recompile, or an expected one (warm-up): red only where there is something to fix.
            if e.sync in expected:
                title += ": expected, nothing to fix"
            marks.append(Mark(k * cell + cell / 2, title, href, not marks or e.sync in programs | expected))
        k = end
    previous = None
    for k, e in enumerate(entries):
        if e.step != previous:
            steps.append((k * cell, str(e.step)))
            previous = e.step
        if steady_x is None and e.phase == "steady":
            steady_x = k * cell
    every = max(1, -(-len(steps) // MAX_STEP_LABELS))
    labelled = tuple((x, label if i % every == 0 else "") for i, (x, label) in enumerate(steps))
    swatches = tuple(
        (
            v.letter,
            colors[v.letter],
            f"ran {v.executions}×"
            + (", compiled" if v.compiled else "")
            + (f", {short_location(v.call_site)}" if v.call_site else ""),
        )
        for v in report.variants
    )
    return Timeline(n * cell, 64, tuple(strips), tuple(marks), labelled, steady_x, swatches)


def build_run_view(
    report: Any,
    diffs: Mapping[int, DiffResult],
    n: int = 0,
    context_lines: int = CONTEXT_LINES,
    budget: list[int] | None = None,
) -> tuple[RunView, dict[str, Any]]:
    """The run page's part for one process, and the data its diffs ship."""
    budget = budget if budget is not None else [html_diff.DATA_BUDGET]
    prefix = f"p{n}-"
    # What the user must fix, costliest first; expected recompiles (warm-up) after, apart.
    ranked = to_fix_first(report.recompiles, by_cost=True)
    anchors = {r.sync: element_id("recompile", str(r.sync), prefix=prefix) for r in ranked}
    data: dict[str, Any] = {}
    views = []
    for rank, r in enumerate(ranked, 1):
        diff = None
        if r.sync in diffs:
            diff = html_diff.build_diff_view(diffs[r.sync], context_lines, f"{prefix}s{r.sync}-", budget)
            data.update(diff.data)
        b = r.baseline
        tensors = tuple(
            TensorView(
                a.kind,
                t.id,
                t.shape,
                t.line,
                "\n".join(str(f) for f in t.frames),
                getattr(t, "match", ""),
                t.held_by,
                ", ".join(t.stored_at),
            )
            for a in r.attribution
            for t in a.tensors
        )
        views.append(
            RecompileView(
                id=anchors[r.sync],
                rank=rank,
                recompile=r,
                baseline=_baseline(b),
                cost=f"{r.compile_seconds:.2f} s" if r.compile_seconds else "",
                stack=tuple(str(f) for f in r.frames),
                attribution=tuple(r.attribution),
                tensors=tensors,
                diff=diff,
                note=r.note
                if diff is not None or r.note
                else "the graphs could not be read again to show them",
                expected=r.expected,
            )
        )
    timed = any(r.compile_seconds for r in report.recompiles)
    variant_ids = {r.variant: anchors[r.sync] for r in ranked}
    view = RunView(prefix + "run", report, _timeline(report, anchors), tuple(views), timed, variant_ids)
    return view, data


def _baseline(b: Any) -> str:
    """`B (sync 1, same call site; closest of B, A: ...)`: which graph and why, as the report says."""
    if b is None:
        return ""
    why = f"; {b.why}" if len(b.compared) > 1 else ""  # one compared: no choice to explain
    return f"{b.variant} (sync {b.sync}, {b.reason}{why})"


def render_report_html(
    reports: Any,
    diffs: Sequence[Mapping[int, DiffResult]] = (),
    context_lines: int = CONTEXT_LINES,
    ranks: Any = None,
) -> str:
    """One self-contained HTML page for a run: per process, the timeline of syncs (an SVG strip
    coloured by graph variant, compiles marked), the recompiles ranked by cost, and for each its
    diff against its baseline with the live tensors implicated.

    `reports` is a `RunReport` or a sequence of them (one per process); `diffs` holds, per
    process in the same order, each recompile's `DiffResult` by its sync
    (`xlagraph.report.diffs.recompile_diffs`); a recompile without one shows no diff.
    """
    many = reports if isinstance(reports, (list, tuple)) else (reports,)
    budget = [html_diff.DATA_BUDGET]
    runs = []
    data: dict[str, Any] = {}
    for n, report in enumerate(many):
        view, shipped = build_run_view(report, diffs[n] if n < len(diffs) else {}, n, context_lines, budget)
        runs.append(view)
        data.update(shipped)
    source = many[0].source if many else ""
    page = ReportPage(
        f"xlagraph report: {source}",
        tuple(runs),
        asset("xlagraph.css"),
        asset("xlagraph.js"),
        page_data(data),
        _ranks_view(ranks),
    )
    return environment().get_template("report.html").render(page=page)


def _ranks_view(ranks: Any) -> Any:
    """The rank view (`xlagraph.report.ranks.RankView`) as the template shows it; None: no view."""
    if ranks is None:
        return None
    from xlagraph.render.ranks_html import ranks_html

    return ranks_html(ranks, PALETTE)
