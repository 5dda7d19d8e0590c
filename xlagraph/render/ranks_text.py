"""The rank view as text and JSON: the rank x step strip, where ranks diverge and why, and the
first collective that does not line up. Appended to `xlagraph report` and `xlagraph check`.
Also the SPMD view of a capture: its recompiles' shardings in the user's `mark_sharding` terms.
"""

from __future__ import annotations

import os
import textwrap
from typing import Any

from xlagraph.diagnose.frames import is_user_location
from xlagraph.report.ranks import CollectiveOp, RankGroup, RankView, describe_ranks

__all__ = [
    "MAX_COLUMNS",
    "rank_view_to_json",
    "render_ranks_text",
    "render_shardings_text",
    "shardings_to_json",
    "strip_columns",
]

WIDTH = 100
MAX_COLUMNS = 40  # strip columns shown; quiet stretches fold into `…`
MAX_CAUSES = 6


def strip_columns(view: RankView, limit: int = MAX_COLUMNS) -> list[int | None]:
    """The steps to show, in order, None for a folded gap: the first and last steps, every step
    where some rank changes graph, and the divergent step with its neighbours."""
    steps = len(view.strip[0]) if view.strip else 0
    if steps <= limit:
        return list(range(steps))
    must = {0, steps - 1}
    for special in (view.divergence, view.collectives):
        if special is not None:
            must.update(range(max(0, special.step - 2), min(steps, special.step + 3)))
    changes = [
        i
        for i in range(1, steps)
        if i not in must
        and (any(row[i] != row[i - 1] for row in view.strip) or len({row[i] for row in view.strip}) > 1)
    ]
    chosen = sorted(must)
    for i in changes:  # earliest changes first, while the strip stays within `limit` columns
        trial = sorted([*chosen, i])
        if len(_with_gaps(trial)) > limit:
            break
        chosen = trial
    return _with_gaps(chosen)


def _with_gaps(steps: list[int]) -> list[int | None]:
    out: list[int | None] = []
    for i in steps:
        if out and out[-1] is not None and i != out[-1] + 1:
            out.append(None)
        out.append(i)
    return out


def _strip(view: RankView) -> list[str]:
    columns = strip_columns(view)
    width = max([len(c) for row in view.strip for c in row] + [len(str(i)) for i in columns if i is not None])
    label = max(len(f"rank {r}") for r in view.ranks)
    div = view.divergence.step if view.divergence else None

    def cell(text: str) -> str:
        return f"{text:>{width}}"

    head = f"  {view.unit:<{label}}  " + " ".join(cell("…" if i is None else str(i)) for i in columns)
    lines = [head.rstrip()]
    for rank, row in zip(view.ranks, view.strip, strict=True):
        cells = " ".join(cell("…" if i is None else (row[i] or "-")) for i in columns)
        lines.append(f"  {f'rank {rank}':<{label}}  {cells}".rstrip())
    if div is not None and div in columns:
        at = len(f"  {'':<{label}}  ") + columns.index(div) * (width + 1) + width - 1
        lines.append(" " * at + f"^ first divergent {view.unit}")
    return lines


def _wrapped(text: str, indent: str = "  ", rest: str | None = None) -> list[str]:
    return textwrap.wrap(
        text, WIDTH, initial_indent=indent, subsequent_indent=rest or indent + "  ", break_on_hyphens=False
    ) or [indent]


def _runs(group: RankGroup, unit: str) -> str:
    verb = "runs" if len(group.ranks) == 1 else "run"
    graphs = "+".join(group.variants) if group.variants else f"nothing (no such {unit})"
    return f"{describe_ranks(group.ranks)} {verb} {graphs}"


def render_ranks_text(view: RankView) -> str:
    world = f" of {view.world}" if view.world else ""
    lines = [f"ranks: {len(view.ranks)} processes, {describe_ranks(view.ranks)}{world}"]
    lines += _strip(view)
    lines.append(
        "  graphs: "
        + ", ".join(f"{letter} {h[:12]}" for letter, h, _ in view.variants[:26])
        + (f", … {len(view.variants) - 26} more" if len(view.variants) > 26 else "")
    )
    d = view.divergence
    if d is None:
        lines.append(f"every rank ran the same graphs at every {view.unit}")
    else:
        odd = "; ".join(_runs(g, view.unit) for g in d.groups[1:])
        where = _runs(d.groups[0], view.unit)
        lines += _wrapped(f"ranks diverge at {view.unit} {d.step}: {odd}, where {where}", "")
        for group, a, b, causes, note in d.diffs:
            who = describe_ranks(d.groups[group].ranks)
            lines.append(f"  {b} ({who}) vs {a} ({describe_ranks(d.groups[0].ranks)}):")
            if note:
                lines += _wrapped(note, "    ")
            shown = list(causes)[:MAX_CAUSES]
            for c in shown:
                lines += _wrapped(f"{c.kind}: {c.summary}", "    ", "      ")  # type: ignore[attr-defined]
                # The user's lines the summary does not quote (a collective's: where it is issued).
                cited = [s for s in c.sources if is_user_location(s) and s not in c.summary]  # type: ignore[attr-defined]
                if cited:
                    lines += _wrapped(f"at {', '.join(cited)}", "      ", "        ")
            if len(causes) > len(shown):
                lines.append(f"    … {len(causes) - len(shown)} more (xlagraph diff the two graphs)")
    m = view.collectives
    if m is not None:
        lines += _wrapped(f"collectives do not line up: {m.text}", "")
        lines += _wrapped(
            f"a real multi-process job hangs there: every rank waits in collective #{m.position} of "
            f"{view.unit} {m.step} for ranks that issue another one ({m.lined_up} collectives lined up "
            "before it)",
            "  ",
        )
    elif d is not None and view.collectives_compared:
        lines += _wrapped(
            f"collectives line up ({view.collectives_compared} compared from {view.unit} {d.step} on): "
            "no hang, but while one rank compiles a graph the others do not, they wait at the next "
            "collective",
            "",
        )
    for note in view.notes:
        lines += _wrapped(f"note: {note}", "")
    return "\n".join(lines) + "\n"


def _op(op: CollectiveOp | None) -> dict[str, Any] | None:
    if op is None:
        return None
    return {
        "kind": op.kind,
        "operands": list(op.operands),
        "groups": op.groups,
        "variant": op.variant,
        "name": op.name,
    }


def rank_view_to_json(view: RankView) -> dict[str, Any]:
    """The `ranks` object of `xlagraph report --json` and `check --json` (README: JSON)."""
    from xlagraph.render.json import _cause

    d, m = view.divergence, view.collectives
    return {
        "ranks": list(view.ranks),
        "processes": list(view.processes),
        "world": view.world,
        "agree": view.agree,
        "unit": view.unit,
        "strip": [list(row) for row in view.strip],
        "variants": [{"variant": v, "graph_hash": h, "module": spec} for v, h, spec in view.variants],
        "divergence": None
        if d is None
        else {
            "step": d.step,
            "groups": [{"ranks": list(g.ranks), "variants": list(g.variants)} for g in d.groups],
            "diffs": [
                {
                    "group": gi,
                    "baseline": a,
                    "variant": b,
                    "causes": [_cause(c) for c in causes],  # type: ignore[arg-type]
                    "note": note,
                }
                for gi, a, b, causes, note in d.diffs
            ],
        },
        "collectives": None
        if m is None
        else {
            "step": m.step,
            "position": m.position,
            "lined_up": m.lined_up,
            "groups": [{"ranks": list(g.ranks), "collective": _op(g.collective)} for g in m.groups],
            "text": m.text,
        },
        "collectives_compared": view.collectives_compared,
        "notes": list(view.notes),
    }


def render_shardings_text(per_process: list[tuple[str, tuple[tuple[int, str], ...]]]) -> str:
    """`(process, ((sync, sentence), ...))` of each process with marked tensors in its recompiles."""
    shown = [(p, items) for p, items in per_process if items]
    if not shown:
        return ""
    lines = ["sharding, in your terms (from the mark_sharding calls the capture recorded):"]
    here = os.getcwd() + os.sep  # paths under the current directory are shown relative to it
    for process, items in shown:
        for sync, text in items:
            who = f"{process} " if len(shown) > 1 else ""
            lines += _wrapped(f"{who}sync {sync}: {text.replace(here, '')}", "  ", "    ")
    return "\n".join(lines) + "\n"


def shardings_to_json(per_process: list[tuple[str, tuple[tuple[int, str], ...]]]) -> list[dict[str, Any]]:
    """The `mark_sharding` list of `xlagraph report --json`: one entry per process that has any."""
    return [
        {"process": p, "recompiles": [{"sync": sync, "text": text} for sync, text in items]}
        for p, items in per_process
        if items
    ]
