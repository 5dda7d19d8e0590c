"""What the HTML run page needs for the rank view: a rank x step strip of coloured cells, the
divergent step marked, and the same sentences as the text view. Rendered by templates/_ranks.html.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlagraph.render.ranks_text import strip_columns
from xlagraph.report.ranks import RankGroup, RankView, describe_ranks

__all__ = ["RanksHtml", "ranks_html"]


@dataclass(frozen=True)
class RanksHtml:
    title: str
    steps: tuple[str, ...]  # column headers: step numbers, "…" for a folded gap
    # (rank label, cells): a cell is (text, colour, title, divergent step)
    rows: tuple[tuple[str, tuple[tuple[str, str, str, bool], ...]], ...]
    legend: tuple[tuple[str, str, str], ...]  # (letter, color, graph hash)
    findings: tuple[str, ...]  # divergence, diffs' causes, collectives: one sentence each
    agree: bool


def _runs(g: RankGroup) -> str:
    verb = "runs" if len(g.ranks) == 1 else "run"
    return f"{describe_ranks(g.ranks)} {verb} {'+'.join(g.variants) or 'nothing'}"


def ranks_html(view: RankView, palette: tuple[str, ...]) -> RanksHtml:
    colors = {letter: palette[k % len(palette)] for k, (letter, _, _) in enumerate(view.variants)}
    columns = strip_columns(view)
    div = view.divergence.step if view.divergence else None
    rows = []
    for rank, row in zip(view.ranks, view.strip, strict=True):
        cells = []
        for i in columns:
            if i is None:
                cells.append(("…", "", "steps folded", False))
                continue
            text = row[i] or "-"
            first = text.split("+")[0]
            cells.append((text, colors.get(first, ""), f"rank {rank}, step {i}: {text}", i == div))
        rows.append((f"rank {rank}", tuple(cells)))
    findings: list[str] = []
    d = view.divergence
    if d is None:
        findings.append("every rank ran the same graphs at every step")
    else:
        odd = "; ".join(_runs(g) for g in d.groups[1:])
        findings.append(f"ranks diverge at step {d.step}: {odd}, where {_runs(d.groups[0])}")
        for group, a, b, causes, note in d.diffs:
            head = f"{b} ({describe_ranks(d.groups[group].ranks)}) vs {a}: "
            findings.append(head + (note or "; ".join(f"{c.kind}: {c.summary}" for c in causes[:4])))  # type: ignore[attr-defined]
    if view.collectives is not None:
        findings.append(f"collectives do not line up: {view.collectives.text}; a real job hangs there")
    elif d is not None and view.collectives_compared:
        findings.append(f"collectives line up ({view.collectives_compared} compared from step {d.step} on)")
    findings.extend(view.notes)
    world = f" of {view.world}" if view.world else ""
    return RanksHtml(
        title=f"{len(view.ranks)} processes, {describe_ranks(view.ranks)}{world}",
        steps=tuple("…" if i is None else str(i) for i in columns),
        rows=tuple(rows),
        legend=tuple((letter, colors[letter], h) for letter, h, _ in view.variants),
        findings=tuple(findings),
        agree=view.agree,
    )
