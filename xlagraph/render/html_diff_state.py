"""The diff page's working state while it is built: element ids, the status of each instruction
(named by a cause, only on one side, changed as a consequence, dead), which printed positions are
shown, the columns and sections being placed, and links to where an instruction ended up. Used by
`html_diff._DiffBuilder` and `html_diff_causes` only."""

from __future__ import annotations

from dataclasses import dataclass, field

from xlagraph.canonical import CanonicalModule
from xlagraph.diff import ComputationPair, DiffResult
from xlagraph.ir import Computation
from xlagraph.render.html_common import element_id
from xlagraph.render.html_diff_view import Link
from xlagraph.render.text import printed


class Ids:
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


ALWAYS_SHOWN = frozenset({"cause", "only-A", "only-B"})


@dataclass
class Statuses:
    """Statuses of one compared pair; `bulk_*` are shown only when the page has few of them."""

    left: dict[str, str]
    right: dict[str, str]
    bulk_left: set[str] = field(default_factory=set)
    bulk_right: set[str] = field(default_factory=set)


@dataclass
class Side:
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


@dataclass(frozen=True)
class Planned:
    """A section before its columns are built."""

    title: str
    note: str
    id: str
    left: Side | None
    right: Side | None
    pair: ComputationPair | None


def shown_positions(
    comp: Computation, status: dict[str, str], bulk: set[str], room: dict[str, int], tag: str
) -> set[int]:
    """Printed positions shown by default: causes, unpaired, and `bulk` ones, while `room` lasts."""
    shown = set()
    for k, ins in enumerate(comp.instructions):
        if room[tag] <= 0:
            break
        if status.get(ins.name) in ALWAYS_SHOWN or ins.name in bulk:
            shown.add(k)
            room[tag] -= 1
    return shown


def unpaired(result: DiffResult) -> tuple[list[str], list[str]]:
    """Computations of each side that no pair compared, callees of new instructions typically."""
    lpaired = {p.left for p in result.pairs}
    rpaired = {p.right for p in result.pairs}
    left = [c.name for c in result.left.module.computations if c.name not in lpaired]
    right = [c.name for c in result.right.module.computations if c.name not in rpaired]
    return left, right


def link(side: Side | None, name: str, text: str = "", title: str = "") -> Link:
    """A link to instruction `name` of `side`, wherever it ended up."""
    text = text or printed(side.canon.module if side else None, name)
    if side is None:
        return Link(text, title=title)
    if name in side.ids and name not in side.lazy:
        return Link(text, "#" + side.ids[name], title=title)
    run = side.run_of.get(name)
    if run is None:
        return Link(text, title=title)
    return Link(text, "#" + run, side.ids.get(name, ""), title)


def find(columns: list[Side], name: str, computation: str = "") -> Side | None:
    """The column of `columns` (one side's) showing instruction `name`, preferring `computation`."""
    found = None
    for side in columns:
        if name in side.comp.by_name:
            if not computation or side.comp.name == computation:
                return side
            found = found or side
    return found
