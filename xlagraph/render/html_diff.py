"""The diff page: two graphs side by side, only the differing neighbourhoods rendered (what it
shows, how runs of unchanged instructions ship, its anchors: docs/development.md, "The HTML pages").

This module plans the sections and places rows and runs; a row is `html_diff_rows`'s, a cause's
panel `html_diff_causes`'s, the working state and links `html_diff_state`'s."""

from __future__ import annotations

from typing import Any

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.changed import named_instructions, pair_statuses
from xlagraph.diff import ComputationPair, DiffResult
from xlagraph.ir import Instruction
from xlagraph.render.html_common import CONTEXT_LINES, asset, environment, page_data
from xlagraph.render.html_diff_causes import cause_view
from xlagraph.render.html_diff_rows import row_view
from xlagraph.render.html_diff_state import (
    Ids,
    Planned,
    Side,
    Statuses,
    shown_positions,
    unpaired,
)
from xlagraph.render.html_diff_view import (
    Column,
    DiffPage,
    DiffView,
    Row,
    Run,
    Section,
    SideInfo,
)
from xlagraph.render.text import headline

__all__ = ["DATA_BUDGET", "build_diff_view", "render_diff_html"]

INLINE_RUN = 40  # runs of at most this many instructions are in the HTML, hidden until clicked
LAZY_RUN = 2000  # longer runs ship as data, whole when at most this long ...
RUN_EDGE = 150  # ... else their first and last RUN_EDGE instructions
DATA_BUDGET = 12000  # instructions shipped as data per page; past it runs only show their count
MAX_CHANGED_SHOWN = 400  # `changed` instructions shown by default when the page has at most this many
MAX_ROWS_SHOWN = 3000  # differing instructions shown per side; the rest stay in runs
MAX_LISTED = 150  # computations named in the "identical" and "only in" lists
MAX_UNPAIRED_SECTIONS = 30  # computations of one side shown as sections of their own


class _DiffBuilder:
    def __init__(self, result: DiffResult, context_lines: int, prefix: str, budget: list[int]) -> None:
        self.result = result
        self.context = max(context_lines, 0)
        self.prefix = prefix
        self.ids = Ids(prefix)
        self.budget = budget  # [instructions that may still ship as data], shared by a page's diffs
        self.data: dict[str, Any] = {}
        self.named = named_instructions(result.differences)
        self.by_name: dict[str, list[Side]] = {"A": [], "B": []}  # columns built, per side
        self.run_count = 0

    # -- what differs ---------------------------------------------------------------------------
    def statuses(self, pair: ComputationPair) -> Statuses:
        """Status of the instructions of both sides that are not `same`."""
        lc = self.result.left.computations[pair.left]
        rc = self.result.right.computations[pair.right]
        st = Statuses(dict.fromkeys(lc.dead, "dead"), dict.fromkeys(rc.dead, "dead"))
        if pair.decided is not None:
            left, right = pair_statuses(lc, rc, pair.decided)
            st.left.update(left)
            st.right.update(right)
            st.bulk_left.update(a for a, status in left.items() if status == "changed")
            st.bulk_right.update(b for b, status in right.items() if status == "changed")
        for names, comp, status, bulk in (
            (self.named["A"], lc, st.left, st.bulk_left),
            (self.named["B"], rc, st.right, st.bulk_right),
        ):
            for name in names:
                if name not in comp.computation.by_name:
                    continue
                if status.get(name) == "dead":
                    bulk.add(name)  # dead code a cause names: shown like `changed` ones
                elif status.get(name) in (None, "changed"):
                    status[name] = "cause"
                    bulk.discard(name)
        return st

    # -- placement ------------------------------------------------------------------------------
    def place(self, side: Side) -> None:
        """Split the printed instructions into shown rows and runs, and record every run."""
        instructions = side.comp.instructions
        keep = set()
        for k in side.shown:
            keep.update(range(max(k - self.context, 0), min(k + self.context + 1, len(instructions))))
        k = 0
        while k < len(instructions):
            if k in keep:
                side.blocks.append(("row", k, k + 1, ""))
                side.ids[instructions[k].name] = self._id(side, instructions[k])
                k += 1
                continue
            end = k
            while end < len(instructions) and end not in keep:
                end += 1
            self.run_count += 1
            run_id = self.ids.make(f"run{self.run_count}")
            mode = self._run_mode(end - k)
            side.blocks.append((mode, k, end, run_id))
            for j in range(k, end):
                name = instructions[j].name
                side.run_of[name] = run_id
                if mode == "inline" or _ships(mode, j - k, end - k):
                    side.ids[name] = self._id(side, instructions[j])
                    if mode != "inline":
                        side.lazy.add(name)
            k = end

    def _run_mode(self, n: int) -> str:
        if n <= INLINE_RUN:
            return "inline"
        ships = n if n <= LAZY_RUN else 2 * RUN_EDGE
        if ships <= self.budget[0]:
            self.budget[0] -= ships
            return "data" if n <= LAZY_RUN else "edges"
        return "omitted"

    def _id(self, side: Side, ins: Instruction) -> str:
        return self.ids.make("L" if side.tag == "A" else "R", side.comp.name, ins.name)

    # -- columns --------------------------------------------------------------------------------
    def column(self, side: Side, other: Side | None, pair: ComputationPair | None) -> Column:
        instructions = side.comp.instructions
        blocks: list[Row | Run] = []
        for mode, start, end, run_id in side.blocks:
            if mode == "row":
                blocks.append(row_view(side, other, pair, instructions[start]))
                continue
            span = instructions[start:end]
            statuses = [side.status.get(i.name, "same") for i in span]
            rows: tuple[Row, ...] = ()
            if mode == "inline":
                rows = tuple(row_view(side, other, pair, i) for i in span)
            elif mode in ("data", "edges"):
                shipped = [i for j, i in enumerate(span) if _ships(mode, j, len(span))]
                self.data[run_id] = {
                    "rows": [row_view(side, other, pair, i).data() for i in shipped],
                    "head": len(shipped) if mode == "data" else RUN_EDGE,
                    "omitted": len(span) - len(shipped),
                    "lines": [span[RUN_EDGE].line, span[-RUN_EDGE - 1].line] if mode == "edges" else [],
                }
            blocks.append(
                Run(
                    id=run_id,
                    count=len(span),
                    mode="inline" if mode == "inline" else ("omitted" if mode == "omitted" else "data"),
                    rows=rows,
                    first_line=span[0].line,
                    last_line=span[-1].line,
                    changed=statuses.count("changed"),
                    dead=statuses.count("dead"),
                )
            )
        total = side.canon.module.instruction_count
        return Column(side.tag, side.comp.name, len(instructions), tuple(blocks), total)

    # -- the whole view -------------------------------------------------------------------------
    def plan(self) -> tuple[list[Planned], list[tuple[str, str]], int, bool]:
        """The sections to show, the compared pairs with nothing to show, and how many `bulk`
        instructions there are (and whether they are shown)."""
        result = self.result
        compared = [p for p in result.pairs if p.matching is not None]
        per_pair = [self.statuses(p) for p in compared]
        bulk = max(sum(len(st.bulk_left) for st in per_pair), sum(len(st.bulk_right) for st in per_pair))
        show_bulk = bulk <= MAX_CHANGED_SHOWN
        room = {"A": MAX_ROWS_SHOWN, "B": MAX_ROWS_SHOWN}
        planned: list[Planned] = []
        quiet: list[tuple[str, str]] = []
        for pair, st in zip(compared, per_pair, strict=True):
            lc, rc = result.left.computations[pair.left], result.right.computations[pair.right]
            lshown = shown_positions(lc.computation, st.left, st.bulk_left if show_bulk else set(), room, "A")
            rshown = shown_positions(
                rc.computation, st.right, st.bulk_right if show_bulk else set(), room, "B"
            )
            if not lshown and not rshown and pair.left != result.left.module.entry.name:
                quiet.append((pair.left, pair.right))
                continue
            title = pair.left if pair.left == pair.right else f"{pair.left} ⇄ {pair.right}"
            planned.append(
                Planned(
                    title,
                    "",
                    self.ids.make("sec", pair.left),
                    Side("A", result.left, lc.computation, st.left, lshown),
                    Side("B", result.right, rc.computation, st.right, rshown),
                    pair,
                )
            )
        only_left, only_right = unpaired(result)
        for tag, canon, names in (("A", result.left, only_left), ("B", result.right, only_right)):
            for name in names[:MAX_UNPAIRED_SECTIONS]:
                comp = canon.module.by_name[name]
                side = Side(tag, canon, comp, {i.name: f"only-{tag}" for i in comp.instructions}, set())
                left, right = (side, None) if tag == "A" else (None, side)
                sec_id = self.ids.make("sec", tag, name)
                planned.append(Planned(name, f"only in {tag}", sec_id, left, right, None))
        return planned, quiet, bulk, show_bulk

    def build(self) -> DiffView:
        result = self.result
        planned, quiet, bulk, show_bulk = self.plan()
        for p in planned:
            for side in (p.left, p.right):
                if side is not None:
                    self.place(side)
                    self.by_name[side.tag].append(side)
        sections = tuple(
            Section(
                p.id,
                p.title,
                p.note,
                self.column(p.left, p.right, p.pair) if p.left else None,
                self.column(p.right, p.left, p.pair) if p.right else None,
            )
            for p in planned
        )
        ids = [self.ids.make(f"cause{n}") for n in range(len(result.causes))]
        causes = [cause_view(result, c, i, self.by_name) for c, i in zip(result.causes, ids, strict=True)]
        identical = [
            (p.left, p.right, len(result.left.computations[p.left].computation.instructions))
            for p in result.pairs
            if p.matching is None
        ]
        only_left, only_right = unpaired(result)
        return DiffView(
            prefix=self.prefix,
            verdict=result.verdict,
            headline=headline(result),
            left=_side_info("A", result.left),
            right=_side_info("B", result.right),
            causes=tuple(v for v in causes if not v.info),
            notes=tuple(v for v in causes if v.info),
            sections=sections,
            identical=tuple(identical[:MAX_LISTED]),
            identical_more=max(len(identical) - MAX_LISTED, 0),
            quiet=tuple(quiet),
            only_left=_listed(result.left, only_left[MAX_UNPAIRED_SECTIONS:]),
            only_right=_listed(result.right, only_right[MAX_UNPAIRED_SECTIONS:]),
            folded="" if show_bulk else FOLDED.format(n=bulk),
            data=self.data,
        )


FOLDED = (
    "{n:,} instructions changed without being a cause of their own (they follow from a cause above, "
    "e.g. shapes downstream of a resized input) or are dead code: folded into the collapsed runs, "
    "counted there and marked ~ or † when expanded"
)


def _listed(canon: CanonicalModule, names: list[str]) -> tuple[tuple[str, int], ...]:
    return tuple((n, len(canon.module.by_name[n].instructions)) for n in names[:MAX_LISTED])


def _ships(mode: str, j: int, n: int) -> bool:
    """Whether the j-th of n instructions of a run is in the page's data."""
    return mode == "data" or (mode == "edges" and (j < RUN_EDGE or j >= n - RUN_EDGE))


def _side_info(tag: str, canon: CanonicalModule) -> SideInfo:
    module = canon.module
    return SideInfo(
        tag=tag,
        label=module.info.label or module.path or "(text)",
        name=module.name,
        format=module.format,
        instructions=module.instruction_count,
        computations=len(module.computations),
        fingerprint=canon.fingerprint,
        graph_hash=module.info.graph_hash,
        entry_instructions=len(module.entry.instructions),
    )


def build_diff_view(
    result: DiffResult, context_lines: int = CONTEXT_LINES, prefix: str = "", budget: list[int] | None = None
) -> DiffView:
    """The diff as the template sees it. `prefix` keeps ids unique when a page shows several
    diffs; `budget` (a one-element list) is the data budget those diffs share."""
    return _DiffBuilder(result, context_lines, prefix, budget or [DATA_BUDGET]).build()


def render_diff_html(result: DiffResult, context_lines: int = CONTEXT_LINES) -> str:
    """One self-contained HTML page showing why the two graphs of `result` differ.

    >>> from xlagraph.parse.hlo import parse_hlo
    >>> from xlagraph.diff import diff_modules
    >>> a = parse_hlo("HloModule m\\nENTRY e {\\n  p = f32[4] parameter(0)\\n"
    ...               "  ROOT r = f32[4] sine(p)\\n}\\n")
    >>> b = parse_hlo("HloModule m\\nENTRY e {\\n  p = f32[4] parameter(0)\\n"
    ...               "  ROOT r = f32[4] cosine(p)\\n}\\n")
    >>> page = render_diff_html(diff_modules(a, b))
    >>> page.startswith("<!DOCTYPE html>"), 'id="L-e-r"' in page, 'id="R-e-r"' in page
    (True, True, True)
    """
    view = build_diff_view(result, context_lines)
    title = f"xlagraph diff: {view.left.label} vs {view.right.label}"
    page = DiffPage(title, view, asset("xlagraph.css"), asset("xlagraph.js"), page_data(view.data))
    return environment().get_template("diff.html").render(page=page)
