"""State fed back growing: an input whose new shape is that of a result the other graph returned,
made by concatenating onto that same input (`bank = torch.cat([bank, keys])[-size:]`, a memory
or history kept step after step). What grows is the model's own state, not the data: the lines
that concatenate and cut it are where the size is decided."""

from __future__ import annotations

from collections.abc import Iterable

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.causes import Change
from xlagraph.diagnose.frames import location, user_frames
from xlagraph.diagnose.recognizers._dataflow import downstream, restated, upstream
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of

__all__ = ["grown_state"]


def grown_state(left: CanonicalModule, changes: Iterable[Change]) -> tuple[str, ...] | None:
    """The user's lines (`file:line`) of the ops that grow each changed input in `left` (A) into
    the result A returns with the input's new shape; None unless every shape change is such a
    state, grown (larger, not smaller) through a concatenation of the old value."""
    entry = left.entry
    users = users_of(entry)
    lines: list[str] = []
    found = False
    for ch in changes:
        if ch.what != "shape":
            continue
        if ch.left not in entry.param_number or _size(ch.new) <= _size(ch.old):
            return None
        # A concatenation that reads the old value itself (through reshapes and copies), not one
        # that reads something computed from it (logits beside scores against a bank).
        cats = [
            ins.name
            for ins in entry.with_opcodes(_CONCATENATE)
            if ch.left in {restated(entry, o) for o in entry.operands.get(ins.name, ())}
        ]
        path = next(
            (
                path
                for o in entry.outputs
                if strip_layout(entry.instruction(o).shape) == strip_layout(ch.new)
                and (path := ({o} | upstream(entry.operands, [o])) & (set(cats) | downstream(users, cats)))
            ),
            None,
        )
        if path is None:
            return None
        found = True
        for ins in entry.with_opcodes(_GROWS):
            if ins.name in path:
                frame = next(iter(user_frames(left.module.frames_of(ins))), None)
                if frame is not None:
                    lines.append(location(frame))
    return tuple(dict.fromkeys(lines)) if found else None


# The ops that grow the state and cut it to its size: where the user's lines are.
_GROWS = frozenset({"concatenate", "slice", "dynamic-slice"})
_CONCATENATE = frozenset({"concatenate"})


def _size(shape: str) -> int:
    dims = strip_layout(shape).partition("[")[2].split("]", 1)[0]
    n = 1
    for d in dims.split(","):
        n *= int(d) if d.strip().isdigit() else 1
    return n
