"""The diff page's context types: what `templates/_diff.html` and `diff.html` read, and what the
script (`xlagraph.js`) builds rows from. Filled by `html_diff.build_diff_view`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from markupsafe import Markup

from xlagraph.render.html_common import STATUS_MARKS, STATUS_TITLES

__all__ = [
    "Attribute",
    "CauseView",
    "Change",
    "Column",
    "DiffPage",
    "DiffView",
    "Link",
    "Move",
    "Row",
    "Run",
    "Section",
    "SideInfo",
]


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
    instructions: int  # of this computation; the header counts the whole module's
    blocks: tuple[Row | Run, ...]
    module_instructions: int = 0  # the module's, all computations together (the header's count)


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
    sources: tuple[str, ...]  # the user's lines only (`at`)
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
    library: tuple[str, ...] = ()  # library lines the instructions came through (`via`)


@dataclass(frozen=True)
class SideInfo:
    tag: str
    label: str
    name: str
    format: str
    instructions: int  # the whole module's: every computation's (a panel counts its own)
    computations: int
    fingerprint: str
    graph_hash: str
    entry_instructions: int = 0


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
