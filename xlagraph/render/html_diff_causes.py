"""The diff page's cause panels: each cause with links to the instructions it names, its table of
changes and its table of inputs or outputs moved. Used by `html_diff.build_diff_view`."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diff import DiffResult
from xlagraph.ir import strip_layout
from xlagraph.render.html_diff_state import Side, find, link
from xlagraph.render.html_diff_view import CauseView, Change, Link, Move
from xlagraph.render.paths import split_user_lines
from xlagraph.source_paths import short_location, short_locations_in

__all__ = ["cause_view"]

MAX_REFS = 24  # instruction links per side of a cause
MAX_TABLE_ROWS = 60  # rows of a changes or permutation table
MAX_LIBRARY = 3  # library lines named beside a cause (`via`), as in the text


def cause_view(result: DiffResult, cause: Cause, cause_id: str, columns: dict[str, list[Side]]) -> CauseView:
    """The panel of `cause`, linking to the columns built (`columns`: per side, A and B)."""
    left_names = [x for x in dict.fromkeys(cause.left) if x]
    right_names = [x for x in dict.fromkeys(cause.right) if x]
    right_comp = _right_of(result, cause.computation)
    a, b = columns["A"], columns["B"]
    left = [link(find(a, x, cause.computation), x) for x in left_names[:MAX_REFS]]
    right = [link(find(b, x, right_comp), x) for x in right_names[:MAX_REFS]]
    changes = [
        Change(
            link(find(a, c.left, cause.computation), c.left) if c.left else Link("—"),
            link(find(b, c.right, right_comp), c.right) if c.right else Link("—"),
            c.what,
            c.old,
            c.new,
        )
        for c in cause.changes[:MAX_TABLE_ROWS]
    ]
    moves = _moves(cause, right_comp, columns)
    moved = [mv for mv in moves if mv.moved]
    user, library = split_user_lines(cause.sources, cause.library)  # `at` yours, `via` the rest
    return CauseView(
        id=cause_id,
        kind=str(cause.kind),
        summary=short_locations_in(cause.summary),
        hint=cause.hint,
        info=cause.info,
        computation=cause.computation,
        sources=tuple(dict.fromkeys(short_location(s) for s in user)),
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
        library=tuple(dict.fromkeys(short_location(s) for s in library))[:MAX_LIBRARY],
    )


def _moves(cause: Cause, right_comp: str, columns: dict[str, list[Side]]) -> list[Move]:
    out = []
    for mv in cause.mapping:
        lside = find(columns["A"], mv.left_name, cause.computation)
        rside = find(columns["B"], mv.right_name, right_comp)
        out.append(
            Move(
                mv.left,
                link(lside, mv.left_name),
                _shape_of(lside, mv.left_name),
                mv.right,
                link(rside, mv.right_name),
                _shape_of(rside, mv.right_name) or mv.shape,
            )
        )
    return out


def _right_of(result: DiffResult, left_computation: str) -> str:
    for pair in result.pairs:
        if pair.left == left_computation:
            return pair.right
    return ""


def _shape_of(side: Side | None, name: str) -> str:
    if side is None or name not in side.comp.by_name:
        return ""
    return strip_layout(side.comp.by_name[name].shape)


def _moved_what(cause: Cause) -> str:
    """What the moves table lists: parameters, outputs, or both (one reason reordered both)."""
    kinds = {
        "parameter" if m.what == "input" else "output" for m in cause.mapping if m.what and m.left != m.right
    }
    if kinds:
        return " and ".join(sorted(kinds))
    return "output" if cause.kind is CauseKind.OUTPUT_PERMUTATION else "parameter"
