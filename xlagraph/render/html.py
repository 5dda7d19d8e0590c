"""Self-contained HTML pages: the diff of two graphs, and the run report.

Reports as data: each page is one Jinja2 template in `templates/` filled from one context
dataclass (`DiffPage`, `ReportPage`); the stylesheet and script are package files inlined into
the page, so it opens offline from a bug-report attachment and fetches nothing. Every string from a
dump goes through autoescaping; the data the script needs is JSON in a
`<script type="application/json">` block with `<`, `>` and `&` escaped. These functions return
text; only the CLI writes files.

What a diff page shows by default is the differing instructions of each compared pair of
computations, each with `context_lines` of printed neighbours:

- instructions a cause names (`cause`),
- live instructions the matcher left unpaired (`only`: only in A, only in B),
- paired instructions whose content or operands changed although no cause names them (`changed`:
  a change the classifier folded into a cause, e.g. every shape downstream of a resized input).
  These, and dead code a cause names, are shown while there are at most `MAX_CHANGED_SHOWN` on
  the page; past that (a batch dimension that changed reshapes half a 120K-instruction graph)
  they are folded into the runs, still marked, and counted in each run's label.

Everything else is a run of "… N unchanged instructions". Short runs are in the page, hidden until
clicked; longer ones ship as data the script turns into rows on demand, whole up to `LAZY_RUN`
instructions, else their first and last `RUN_EDGE`; once `DATA_BUDGET` instructions ship, runs
only show their count and the dump lines they span. So a page's size follows the size of the
difference, not of the graphs.

Anchors are `L-<computation>-<instruction>` (A) and `R-…` (B), sanitized. A link's `href` always
names an element in the page; a link to an instruction inside a run that is built on demand points
at the run and carries the instruction's id in `data-ref`, which the script opens and jumps to.

The run page shows, per process, the syncs as an SVG strip coloured by graph variant with the
compiles marked, the recompiles ranked by compile time, and for each the diff partial of the diff
page (ids prefixed per recompile) with the live tensors implicated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import PurePath
from typing import Any, ClassVar

from jinja2 import Environment, FunctionLoader, StrictUndefined
from markupsafe import Markup

from xlagraph.canonical import CanonicalComputation, CanonicalModule
from xlagraph.canonical.hashes import COMMUTATIVE, compared_value
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diff import ComputationPair, DiffResult
from xlagraph.ir import Computation, Instruction, Module, strip_layout
from xlagraph.match import Matching
from xlagraph.render.text import headline

__all__ = [
    "CauseView",
    "Column",
    "DiffPage",
    "DiffView",
    "Link",
    "ReportPage",
    "Row",
    "Run",
    "RunView",
    "Section",
    "build_diff_view",
    "build_run_view",
    "element_id",
    "instruction_anchor",
    "recompile_diffs",
    "render_diff_html",
    "render_report_html",
    "script_json",
]

CONTEXT_LINES = 3
INLINE_RUN = 40  # runs of at most this many instructions are in the HTML, hidden until clicked
LAZY_RUN = 2000  # longer runs ship as data, whole when at most this long ...
RUN_EDGE = 150  # ... else their first and last RUN_EDGE instructions
DATA_BUDGET = 12000  # instructions shipped as data per page; past it runs only show their count
MAX_CHANGED_SHOWN = 400  # `changed` instructions shown by default when the page has at most this many
MAX_ROWS_SHOWN = 3000  # differing instructions shown per side; the rest stay in runs
MAX_REFS = 24  # instruction links per side of a cause
MAX_TABLE_ROWS = 60  # rows of a changes or permutation table
MAX_LISTED = 150  # computations named in the "identical" and "only in" lists
MAX_UNPAIRED_SECTIONS = 30  # computations of one side shown as sections of their own
MAX_ATTRIBUTE = 160  # characters of an attribute value shown; the whole value is in its title
MAX_STACK = 8  # frames in a source tooltip

STATUS_TITLES = {
    "cause": "named by a cause",
    "only-A": "only in A: the matcher found no counterpart",
    "only-B": "only in B: the matcher found no counterpart",
    "changed": "changed, as a consequence of a cause (no cause of its own)",
    "dead": "dead code: never reaches a result, ignored",
    "same": "",
}
STATUS_MARKS = {"cause": "●", "only-A": "−", "only-B": "+", "changed": "~", "dead": "†", "same": ""}

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


# --- context types ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """A jump inside the page. `href` (`#id`) always names an element of the page; `ref` is the
    exact instruction id when that instruction is in a run the script builds on demand."""

    text: str
    href: str = ""
    ref: str = ""
    title: str = ""

    def data(self) -> list[str]:
        return [self.text, self.href, self.ref, self.title]


@dataclass(frozen=True)
class Attribute:
    key: str
    text: str
    full: str
    delta: bool


@dataclass(frozen=True)
class Row:
    """One instruction as printed: `ROOT name = shape opcode(operands), attributes`."""

    kind: ClassVar[str] = "row"
    id: str
    line: int
    name: str
    root: bool
    shape: str
    shape_delta: bool
    opcode: str
    opcode_delta: bool
    operands: tuple[Link, ...]
    payload: str
    attributes: tuple[Attribute, ...]
    source: str
    stack: str
    op_name: str
    status: str
    counterpart: Link | None

    @property
    def mark(self) -> str:
        return STATUS_MARKS[self.status]

    @property
    def status_title(self) -> str:
        return STATUS_TITLES[self.status]

    def data(self) -> dict[str, Any]:
        """The row for the script (`xlagraph.js` `rowElement`), empty fields left out."""
        d: dict[str, Any] = {"i": self.id, "l": self.line, "n": self.name, "s": self.shape, "o": self.opcode}
        optional = {
            "r": int(self.root),
            "sd": int(self.shape_delta),
            "od": int(self.opcode_delta),
            "a": [o.data() for o in self.operands],
            "p": self.payload,
            "t": [[a.key, a.text, a.full if a.full != a.text else "", int(a.delta)] for a in self.attributes],
            "src": self.source,
            "stk": self.stack,
            "on": self.op_name,
            "st": "" if self.status == "same" else self.status,
            "c": self.counterpart.data() if self.counterpart else None,
        }
        d.update((k, v) for k, v in optional.items() if v)
        return d


@dataclass(frozen=True)
class Run:
    """Consecutive instructions not shown by default. `mode`: `inline` (rows in the page, hidden),
    `data` (rows built by the script from the page's data) or `omitted` (only counted)."""

    kind: ClassVar[str] = "run"
    id: str
    count: int
    mode: str
    rows: tuple[Row, ...]
    first_line: int
    last_line: int
    changed: int
    dead: int

    @property
    def label(self) -> str:
        extra = []
        if self.changed:
            extra.append(f"{self.changed:,} changed")
        if self.dead:
            extra.append(f"{self.dead:,} dead")
        what = "unchanged instruction" if not extra else "instruction"
        text = f"… {self.count:,} {what}{'' if self.count == 1 else 's'}"
        if extra:
            text += f" ({', '.join(extra)})"
        if self.first_line:
            text += f", dump lines {self.first_line}–{self.last_line}"
        if self.mode == "omitted":
            text += ": not included in this page"
        return text


@dataclass(frozen=True)
class Column:
    """One side of a section: `A` or `B`, a computation and its rows and runs in printed order."""

    side: str
    computation: str
    instructions: int
    blocks: tuple[Row | Run, ...]


@dataclass(frozen=True)
class Section:
    """A pair of computations side by side (one side is None for a computation only one has)."""

    id: str
    title: str
    note: str
    left: Column | None
    right: Column | None


@dataclass(frozen=True)
class Change:
    left: Link
    right: Link
    what: str
    old: str
    new: str


@dataclass(frozen=True)
class Move:
    """A's parameter (or output) `left_index` is B's `right_index`."""

    left_index: int
    left: Link
    left_shape: str
    right_index: int
    right: Link
    right_shape: str

    @property
    def moved(self) -> bool:
        return self.left_index != self.right_index


@dataclass(frozen=True)
class CauseView:
    id: str
    kind: str
    summary: str
    hint: str
    info: bool
    computation: str
    sources: tuple[str, ...]
    left: tuple[Link, ...]
    left_more: int
    right: tuple[Link, ...]
    right_more: int
    changes: tuple[Change, ...]
    changes_more: int
    moves: tuple[Move, ...]
    moves_more: int
    moves_same: int
    moved_what: str


@dataclass(frozen=True)
class SideInfo:
    tag: str
    label: str
    name: str
    format: str
    instructions: int
    computations: int
    fingerprint: str
    graph_hash: str


@dataclass(frozen=True)
class DiffView:
    """Everything the diff partial (`_diff.html`) shows; `data` holds the runs the script builds."""

    prefix: str
    verdict: str
    headline: str
    left: SideInfo
    right: SideInfo
    causes: tuple[CauseView, ...]
    notes: tuple[CauseView, ...]
    sections: tuple[Section, ...]
    identical: tuple[tuple[str, str, int], ...]
    identical_more: int
    quiet: tuple[tuple[str, str], ...]
    only_left: tuple[tuple[str, int], ...]
    only_right: tuple[tuple[str, int], ...]
    folded: str
    data: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class DiffPage:
    """The context of `diff.html`."""

    title: str
    diff: DiffView
    css: Markup
    js: Markup
    data: Markup


# --- building the diff view --------------------------------------------------------------------


def element_id(*parts: str, prefix: str = "") -> str:
    """`prefix` + the parts joined by `-`, each with every character but `A-Za-z0-9_.-` made `_`.

    >>> element_id("L", "main.1", "tanh.1"), element_id("R", "%c", "a b", prefix="d2-")
    ('L-main.1-tanh.1', 'd2-R-_c-a_b')
    """
    return prefix + "-".join(_ID_UNSAFE.sub("_", p) for p in parts)


def instruction_anchor(tag: str, computation: str, name: str, prefix: str = "") -> str:
    """The id of instruction `name` of `computation` on side `tag` (`A` or `B`), unless it
    collided with an earlier id after sanitizing (then `-2`, `-3` … are appended)."""
    return element_id("L" if tag == "A" else "R", computation, name, prefix=prefix)


class _Ids:
    """Unique, sanitized element ids for one page."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.used: set[str] = set()

    def make(self, *parts: str) -> str:
        base = element_id(*parts, prefix=self.prefix)
        candidate, k = base, 1
        while candidate in self.used:
            k += 1
            candidate = f"{base}-{k}"
        self.used.add(candidate)
        return candidate


_ALWAYS_SHOWN = frozenset({"cause", "only-A", "only-B"})


@dataclass
class _Statuses:
    """Statuses of one compared pair; `bulk_*` are shown only when the page has few of them."""

    left: dict[str, str]
    right: dict[str, str]
    bulk_left: set[str] = field(default_factory=set)
    bulk_right: set[str] = field(default_factory=set)


@dataclass
class _Side:
    """One column while it is being built: where each instruction ends up."""

    tag: str  # A or B
    canon: CanonicalModule
    comp: Computation
    status: dict[str, str]  # instruction name -> status, for names that are not `same`
    shown: set[int]  # printed positions shown as rows
    ids: dict[str, str] = field(default_factory=dict)  # name -> element id (rows in the page or data)
    run_of: dict[str, str] = field(default_factory=dict)  # name -> run id, for names inside runs
    lazy: set[str] = field(default_factory=set)  # names whose row only exists once the script builds it
    blocks: list[tuple[str, int, int, str]] = field(default_factory=list)  # (kind, start, end, run id)


class _DiffBuilder:
    def __init__(self, result: DiffResult, context_lines: int, prefix: str, budget: list[int]) -> None:
        self.result = result
        self.context = max(context_lines, 0)
        self.prefix = prefix
        self.ids = _Ids(prefix)
        self.budget = budget  # [instructions that may still ship as data], shared by a page's diffs
        self.data: dict[str, Any] = {}
        self.named = _named(result)
        self.by_name: dict[str, list[_Side]] = {"A": [], "B": []}  # columns built, per side
        self.run_count = 0

    # -- what differs ---------------------------------------------------------------------------
    def statuses(self, pair: ComputationPair) -> _Statuses:
        """Status of the instructions of both sides that are not `same`."""
        lc = self.result.left.computations[pair.left]
        rc = self.result.right.computations[pair.right]
        m = pair.matching
        st = _Statuses(dict.fromkeys(lc.dead, "dead"), dict.fromkeys(rc.dead, "dead"))
        if m is not None:
            for a in lc.order:
                b = m.left.get(a)
                if b is None:
                    st.left[a] = "only-A"
                elif _changed(lc, rc, m, a, b):
                    st.left[a], st.right[b] = "changed", "changed"
                    st.bulk_left.add(a)
                    st.bulk_right.add(b)
            for b in rc.order:
                if b not in m.right:
                    st.right[b] = "only-B"
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
    def place(self, side: _Side) -> None:
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

    def _id(self, side: _Side, ins: Instruction) -> str:
        return self.ids.make("L" if side.tag == "A" else "R", side.comp.name, ins.name)

    def link(self, side: _Side | None, name: str, text: str = "", title: str = "") -> Link:
        """A link to instruction `name` of `side`, wherever it ended up."""
        text = text or _printed(side.canon.module if side else None, name)
        if side is None:
            return Link(text, title=title)
        if name in side.ids and name not in side.lazy:
            return Link(text, "#" + side.ids[name], title=title)
        run = side.run_of.get(name)
        if run is None:
            return Link(text, title=title)
        return Link(text, "#" + run, side.ids.get(name, ""), title)

    def find(self, tag: str, name: str, computation: str = "") -> _Side | None:
        """The column showing instruction `name` of side `tag`, preferring `computation`."""
        found = None
        for side in self.by_name[tag]:
            if name in side.comp.by_name:
                if not computation or side.comp.name == computation:
                    return side
                found = found or side
        return found

    # -- rows -----------------------------------------------------------------------------------
    def row(self, side: _Side, other: _Side | None, m: Matching | None, ins: Instruction) -> Row:
        module = side.canon.module
        status = side.status.get(ins.name, "same")
        partner = None
        counterpart = None
        if m is not None and other is not None:
            partner_name = (m.left if side.tag == "A" else m.right).get(ins.name)
            if partner_name is not None:
                partner = other.comp.by_name.get(partner_name)
                matcher = m.matcher.get(ins.name if side.tag == "A" else partner_name, "")
                title = f"{other.tag}: {_printed(other.canon.module, partner_name)}" + (
                    f" (matched by {matcher})" if matcher else ""
                )
                counterpart = self.link(other, partner_name, _printed(module, ins.name), title)
        frames = module.frames_of(ins)
        source = stack = ""
        if frames:
            first = frames[0]
            source = f"{PurePath(first.file).name}:{first.line}" if first.line else PurePath(first.file).name
            stack = "\n".join(dict.fromkeys(str(f) for f in frames[:MAX_STACK]))
        theirs = _attribute_values(partner) if partner is not None else {}
        attributes = tuple(
            Attribute(
                k,
                _clip(v),
                v,
                partner is not None and (cv := compared_value(ins, k, v)) is not None and cv != theirs.get(k),
            )
            for k, v in ins.attributes
        )
        return Row(
            id=side.ids[ins.name],
            line=ins.line,
            name=_printed(module, ins.name),
            root=ins.is_root,
            shape=ins.shape,
            shape_delta=partner is not None and strip_layout(ins.shape) != strip_layout(partner.shape),
            opcode=ins.opcode,
            opcode_delta=partner is not None and ins.opcode != partner.opcode,
            operands=tuple(self.link(side, o) for o in ins.operands),
            payload=ins.payload,
            attributes=attributes,
            source=source,
            stack=stack,
            op_name=ins.metadata.op_name if ins.metadata else "",
            status=status,
            counterpart=counterpart,
        )

    def column(self, side: _Side, other: _Side | None, m: Matching | None) -> Column:
        instructions = side.comp.instructions
        blocks: list[Row | Run] = []
        for mode, start, end, run_id in side.blocks:
            if mode == "row":
                blocks.append(self.row(side, other, m, instructions[start]))
                continue
            span = instructions[start:end]
            statuses = [side.status.get(i.name, "same") for i in span]
            rows: tuple[Row, ...] = ()
            if mode == "inline":
                rows = tuple(self.row(side, other, m, i) for i in span)
            elif mode in ("data", "edges"):
                shipped = [i for j, i in enumerate(span) if _ships(mode, j, len(span))]
                self.data[run_id] = {
                    "rows": [self.row(side, other, m, i).data() for i in shipped],
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
        return Column(side.tag, side.comp.name, len(instructions), tuple(blocks))

    # -- causes ---------------------------------------------------------------------------------
    def cause(self, n: int, cause: Cause) -> CauseView:
        left_names = [x for x in dict.fromkeys(cause.left) if x]
        right_names = [x for x in dict.fromkeys(cause.right) if x]
        right_comp = self._right_of(cause.computation)
        left = [self.link(self.find("A", x, cause.computation), x) for x in left_names[:MAX_REFS]]
        right = [self.link(self.find("B", x, right_comp), x) for x in right_names[:MAX_REFS]]
        changes = [
            Change(
                self.link(self.find("A", c.left, cause.computation), c.left) if c.left else Link("—"),
                self.link(self.find("B", c.right, right_comp), c.right) if c.right else Link("—"),
                c.what,
                c.old,
                c.new,
            )
            for c in cause.changes[:MAX_TABLE_ROWS]
        ]
        moves = self.moves(cause, right_comp)
        moved = [mv for mv in moves if mv.moved]
        return CauseView(
            id=self.ids.make(f"cause{n}"),
            kind=str(cause.kind),
            summary=cause.summary,
            hint=cause.hint,
            info=cause.info,
            computation=cause.computation,
            sources=cause.sources,
            left=tuple(left),
            left_more=len(left_names) - len(left),
            right=tuple(right),
            right_more=len(right_names) - len(right),
            changes=tuple(changes),
            changes_more=len(cause.changes) - len(changes),
            moves=tuple(moved[:MAX_TABLE_ROWS]),
            moves_more=max(len(moved) - MAX_TABLE_ROWS, 0),
            moves_same=len(moves) - len(moved),
            moved_what=_moved_what(cause),
        )

    def moves(self, cause: Cause, right_comp: str) -> list[Move]:
        out = []
        for mv in cause.mapping:
            lside = self.find("A", mv.left_name, cause.computation)
            rside = self.find("B", mv.right_name, right_comp)
            out.append(
                Move(
                    mv.left,
                    self.link(lside, mv.left_name),
                    _shape_of(lside, mv.left_name),
                    mv.right,
                    self.link(rside, mv.right_name),
                    _shape_of(rside, mv.right_name) or mv.shape,
                )
            )
        return out

    def _right_of(self, left_computation: str) -> str:
        for pair in self.result.pairs:
            if pair.left == left_computation:
                return pair.right
        return ""

    # -- the whole view -------------------------------------------------------------------------
    def plan(self) -> tuple[list[_Planned], list[tuple[str, str]], int, bool]:
        """The sections to show, the compared pairs with nothing to show, and how many `bulk`
        instructions there are (and whether they are shown)."""
        result = self.result
        compared = [p for p in result.pairs if p.matching is not None]
        per_pair = [self.statuses(p) for p in compared]
        bulk = max(sum(len(st.bulk_left) for st in per_pair), sum(len(st.bulk_right) for st in per_pair))
        show_bulk = bulk <= MAX_CHANGED_SHOWN
        room = {"A": MAX_ROWS_SHOWN, "B": MAX_ROWS_SHOWN}
        planned: list[_Planned] = []
        quiet: list[tuple[str, str]] = []
        for pair, st in zip(compared, per_pair, strict=True):
            lc, rc = result.left.computations[pair.left], result.right.computations[pair.right]
            lshown = _shown(lc.computation, st.left, st.bulk_left if show_bulk else set(), room, "A")
            rshown = _shown(rc.computation, st.right, st.bulk_right if show_bulk else set(), room, "B")
            if not lshown and not rshown and pair.left != result.left.module.entry.name:
                quiet.append((pair.left, pair.right))
                continue
            title = pair.left if pair.left == pair.right else f"{pair.left} ⇄ {pair.right}"
            planned.append(
                _Planned(
                    title,
                    "",
                    self.ids.make("sec", pair.left),
                    _Side("A", result.left, lc.computation, st.left, lshown),
                    _Side("B", result.right, rc.computation, st.right, rshown),
                    pair.matching,
                )
            )
        only_left, only_right = _unpaired(result)
        for tag, canon, names in (("A", result.left, only_left), ("B", result.right, only_right)):
            for name in names[:MAX_UNPAIRED_SECTIONS]:
                comp = canon.module.by_name[name]
                side = _Side(tag, canon, comp, {i.name: f"only-{tag}" for i in comp.instructions}, set())
                left, right = (side, None) if tag == "A" else (None, side)
                sec_id = self.ids.make("sec", tag, name)
                planned.append(_Planned(name, f"only in {tag}", sec_id, left, right, None))
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
                self.column(p.left, p.right, p.matching) if p.left else None,
                self.column(p.right, p.left, p.matching) if p.right else None,
            )
            for p in planned
        )
        causes = [self.cause(n, c) for n, c in enumerate(result.causes)]
        identical = [
            (p.left, p.right, len(result.left.computations[p.left].computation.instructions))
            for p in result.pairs
            if p.matching is None
        ]
        only_left, only_right = _unpaired(result)
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


@dataclass(frozen=True)
class _Planned:
    """A section before its columns are built."""

    title: str
    note: str
    id: str
    left: _Side | None
    right: _Side | None
    matching: Matching | None


FOLDED = (
    "{n:,} instructions changed without being a cause of their own (they follow from a cause above, "
    "e.g. shapes downstream of a resized input) or are dead code: folded into the collapsed runs, "
    "counted there and marked ~ or † when expanded"
)


def _listed(canon: CanonicalModule, names: list[str]) -> tuple[tuple[str, int], ...]:
    return tuple((n, len(canon.module.by_name[n].instructions)) for n in names[:MAX_LISTED])


def _named(result: DiffResult) -> dict[str, set[str]]:
    """Instruction names the (non-info) causes name, per side."""
    named: dict[str, set[str]] = {"A": set(), "B": set()}
    for cause in result.differences:
        named["A"].update(cause.left)
        named["B"].update(cause.right)
        for change in cause.changes:
            named["A"].add(change.left)
            named["B"].add(change.right)
        for mv in cause.mapping:
            if mv.left != mv.right:
                named["A"].add(mv.left_name)
                named["B"].add(mv.right_name)
    for names in named.values():
        names.discard("")
    return named


def _changed(lc: CanonicalComputation, rc: CanonicalComputation, m: Matching, a: str, b: str) -> bool:
    """A paired instruction changed: its content key differs or its operands were rewired."""
    if lc.keys[a] != rc.keys[b]:
        return True
    mapped = [m.left.get(o) for o in lc.operands[a]]
    ops = list(rc.operands[b])
    if lc.instruction(a).opcode in COMMUTATIVE:
        return sorted(map(str, mapped)) != sorted(ops)
    return mapped != ops


def _shown(
    comp: Computation, status: dict[str, str], bulk: set[str], room: dict[str, int], tag: str
) -> set[int]:
    """Printed positions shown by default: causes, unpaired, and `bulk` ones, while `room` lasts."""
    shown = set()
    for k, ins in enumerate(comp.instructions):
        if room[tag] <= 0:
            break
        if status.get(ins.name) in _ALWAYS_SHOWN or ins.name in bulk:
            shown.add(k)
            room[tag] -= 1
    return shown


def _ships(mode: str, j: int, n: int) -> bool:
    """Whether the j-th of n instructions of a run is in the page's data."""
    return mode == "data" or (mode == "edges" and (j < RUN_EDGE or j >= n - RUN_EDGE))


def _unpaired(result: DiffResult) -> tuple[list[str], list[str]]:
    """Computations of each side that no pair compared, callees of new instructions typically."""
    lpaired = {p.left for p in result.pairs}
    rpaired = {p.right for p in result.pairs}
    left = [c.name for c in result.left.module.computations if c.name not in lpaired]
    right = [c.name for c in result.right.module.computations if c.name not in rpaired]
    return left, right


def _attribute_values(ins: Instruction) -> dict[str, str]:
    return {k: cv for k, v in ins.attributes if (cv := compared_value(ins, k, v)) is not None}


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ATTRIBUTE else text[: MAX_ATTRIBUTE - 1] + "…"


def _printed(module: Module | None, name: str) -> str:
    """Lazy-IR nodes are numbers; print them as the dump does (`%12`)."""
    return f"%{name}" if module is not None and module.format == "lazy-ir" and name.isdigit() else name


def _shape_of(side: _Side | None, name: str) -> str:
    if side is None or name not in side.comp.by_name:
        return ""
    return strip_layout(side.comp.by_name[name].shape)


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
    )


def build_diff_view(
    result: DiffResult, context_lines: int = CONTEXT_LINES, prefix: str = "", budget: list[int] | None = None
) -> DiffView:
    """The diff as the template sees it. `prefix` keeps ids unique when a page shows several
    diffs; `budget` (a one-element list) is the data budget those diffs share."""
    return _DiffBuilder(result, context_lines, prefix, budget or [DATA_BUDGET]).build()


# --- pages ----------------------------------------------------------------------------------------


def _load(name: str) -> str:
    return resources.files("xlagraph.templates").joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=FunctionLoader(_load),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["grouped"] = lambda n: f"{n:,}"
    return env


def _asset(name: str) -> Markup:
    """A stylesheet or script of ours, inlined as is."""
    text = _load(name)
    if "</" in text.replace("<\\/", ""):
        raise ValueError(f"{name} contains '</', which would end its inline element")
    return Markup(text)


def script_json(value: Any) -> Markup:
    """JSON safe inside `<script type="application/json">`: no `<`, `>` or `&` survive."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return Markup(text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _page_data(runs: dict[str, Any]) -> Markup:
    status = {k: [STATUS_MARKS[k], STATUS_TITLES[k]] for k in STATUS_MARKS}
    return script_json({"runs": runs, "status": status})


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
    page = DiffPage(title, view, _asset("xlagraph.css"), _asset("xlagraph.js"), _page_data(view.data))
    return _environment().get_template("diff.html").render(page=page)


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


@dataclass(frozen=True)
class RunView:
    id: str
    report: Any  # xlagraph.report.model.RunReport
    timeline: Timeline
    recompiles: tuple[RecompileView, ...]  # ranked by cost
    timed: bool


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
        site = f" at {e.call_site}" if e.call_site else ""
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
            # Grey: a program's first compile (the run's first, or another program's), not a recompile.
            marks.append(Mark(k * cell + cell / 2, title, href, not marks or e.sync in programs))
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
            + (f", {v.call_site}" if v.call_site else ""),
        )
        for v in report.variants
    )
    return Timeline(n * cell, 64, tuple(strips), tuple(marks), labelled, steady_x, swatches)


def recompile_diffs(report: Any) -> dict[int, DiffResult]:
    """The diff of each recompile against its baseline, keyed by the recompile's sync, recomputed
    from the variants' HLO (`Variant.module`); recompiles without both graphs are left out."""
    from xlagraph.diff import diff_modules
    from xlagraph.errors import XlagraphError
    from xlagraph.parse.sources import load_module

    specs = {v.letter: v.module for v in report.variants}
    modules: dict[str, Module | None] = {}

    def module(letter: str) -> Module | None:
        spec = specs.get(letter, "")
        if spec and spec not in modules:
            try:
                modules[spec] = load_module(spec)
            except (XlagraphError, OSError, RecursionError):
                modules[spec] = None
        return modules.get(spec) if spec else None

    out = {}
    for r in report.recompiles:
        if r.baseline is None or not r.causes:
            continue
        a, b = module(r.baseline.variant), module(r.variant)
        if a is not None and b is not None:
            out[r.sync] = diff_modules(a, b)
    return out


def build_run_view(
    report: Any,
    diffs: dict[int, DiffResult],
    n: int = 0,
    context_lines: int = CONTEXT_LINES,
    budget: list[int] | None = None,
) -> tuple[RunView, dict[str, Any]]:
    """The run page's part for one process, and the data its diffs ship."""
    budget = budget if budget is not None else [DATA_BUDGET]
    prefix = f"p{n}-"
    ranked = sorted(report.recompiles, key=lambda r: (-r.compile_seconds, r.sync))
    anchors = {r.sync: element_id("recompile", str(r.sync), prefix=prefix) for r in ranked}
    data: dict[str, Any] = {}
    views = []
    for rank, r in enumerate(ranked, 1):
        diff = None
        if r.sync in diffs:
            diff = build_diff_view(diffs[r.sync], context_lines, f"{prefix}s{r.sync}-", budget)
            data.update(diff.data)
        b = r.baseline
        tensors = tuple(
            TensorView(
                a.kind, t.id, t.shape, t.line, "\n".join(str(f) for f in t.frames), getattr(t, "match", "")
            )
            for a in r.attribution
            for t in a.tensors
        )
        views.append(
            RecompileView(
                id=anchors[r.sync],
                rank=rank,
                recompile=r,
                baseline=f"{b.variant} (sync {b.sync}, {b.reason})" if b else "",
                cost=f"{r.compile_seconds:.2f} s" if r.compile_seconds else "",
                stack=tuple(str(f) for f in r.frames),
                attribution=tuple(r.attribution),
                tensors=tensors,
                diff=diff,
                note=r.note
                if diff is not None or r.note
                else "the graphs could not be read again to show them",
            )
        )
    timed = any(r.compile_seconds for r in report.recompiles)
    view = RunView(prefix + "run", report, _timeline(report, anchors), tuple(views), timed)
    return view, data


def render_report_html(
    reports: Any,
    diffs: dict[int, DiffResult] | None = None,
    context_lines: int = CONTEXT_LINES,
    ranks: Any = None,
) -> str:
    """One self-contained HTML page for a run: per process, the timeline of syncs (an SVG strip
    coloured by graph variant, compiles marked), the recompiles ranked by cost, and for each its
    diff against its baseline with the live tensors implicated.

    `reports` is a `RunReport` or a sequence of them (one per process). `diffs` maps a recompile's
    sync to its `DiffResult` (only with a single report); by default they are recomputed from the
    variants' HLO (`recompile_diffs`).
    """
    many = reports if isinstance(reports, (list, tuple)) else (reports,)
    budget = [DATA_BUDGET]
    runs = []
    data: dict[str, Any] = {}
    for n, report in enumerate(many):
        given = diffs if diffs is not None and len(many) == 1 else None
        view, shipped = build_run_view(
            report, given if given is not None else recompile_diffs(report), n, context_lines, budget
        )
        runs.append(view)
        data.update(shipped)
    source = many[0].source if many else ""
    page = ReportPage(
        f"xlagraph report: {source}",
        tuple(runs),
        _asset("xlagraph.css"),
        _asset("xlagraph.js"),
        _page_data(data),
        _ranks_view(ranks),
    )
    return _environment().get_template("report.html").render(page=page)


def _ranks_view(ranks: Any) -> Any:
    """The rank view (`xlagraph.report.ranks.RankView`) as the template shows it; None: no view."""
    if ranks is None:
        return None
    from xlagraph.render.ranks_html import ranks_html

    return ranks_html(ranks, PALETTE)


def _moved_what(cause: Cause) -> str:
    """What the moves table lists: parameters, outputs, or both (one reason reordered both)."""
    kinds = {
        "parameter" if m.what == "input" else "output" for m in cause.mapping if m.what and m.left != m.right
    }
    if kinds:
        return " and ".join(sorted(kinds))
    return "output" if cause.kind is CauseKind.OUTPUT_PERMUTATION else "parameter"
