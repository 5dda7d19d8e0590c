"""Eager mode's op compiles judged: torch_xla compiles each op on its own, once per op and input
shapes. An op compiled in a later step than the first is a recompile where the same op compiled
before at the same call site (the line its metadata names) with other shapes (`was`), and new work
otherwise (an evaluation pass, a branch taken once): one op name compiled earlier by other code
with other shapes is that code's compile, not this one's. `report/eager.py` reads the op modules
and words the steps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xlagraph.diagnose.fixes import EAGER_SHAPE_FIX
from xlagraph.source_paths import is_library_path

__all__ = ["LaterOp", "OpShapes", "eager_fix", "later_ops"]


@dataclass(frozen=True)
class OpShapes:
    """One op module eager mode compiled: torch's op, the line it ran at ("" for autograd's
    backward: one call site per op), its inputs' shapes then its output's, the lines that made
    its inputs."""

    step: int
    op: str
    at: str
    shapes: tuple[str, ...]
    lines: tuple[str, ...]


@dataclass(frozen=True)
class LaterOp:
    """An op compiled after the first step (`index`: its place in the compiles judged): `was` the
    earlier shapes it compiled for at its call site (None: new work), `at` the user's line that
    made a changed input (else the op's own user line, else ""), `dims` the dimension changes."""

    index: int
    was: tuple[str, ...] | None
    at: str
    dims: tuple[str, ...]


def later_ops(compiles: Sequence[OpShapes], first_step: int) -> list[LaterOp]:
    """Each op of `compiles` (in the order compiled) compiled after `first_step`, judged against
    those of the same op and call site compiled in earlier steps."""
    seen: dict[tuple[str, str], list[tuple[int, tuple[str, ...]]]] = {}
    later = []
    for n, c in enumerate(compiles):
        before = seen.setdefault((c.op, c.at), [])
        if c.step != first_step:
            sig, lines = c.shapes, c.lines
            was = _closest(sig, [b for step, b in before if step < c.step])
            changed = [k for k in range(len(sig)) if was is not None and sig[k] != was[k]]
            made = [lines[k] for k in changed if k < len(lines) and lines[k] and not _library(lines[k])]
            user_at = made[0] if made else c.at if c.at and not _library(c.at) else ""
            dims = [d for k in changed for d in _dims(was[k], sig[k])] if was is not None else []
            later.append(LaterOp(n, was, user_at, tuple(dims)))
        before.append((c.step, c.shapes))
    return later


def eager_fix(later: Sequence[LaterOp]) -> str:
    """The fix where some op compiled again for new shapes, else ""."""
    return EAGER_SHAPE_FIX if any(o.was is not None for o in later) else ""


def _closest(sig: tuple[str, ...], before: Sequence[tuple[str, ...]]) -> tuple[str, ...] | None:
    """The earlier shapes of the op most like these: as many inputs, fewest shapes and then fewest
    dimensions that differ, the latest of equals."""
    same = [b for b in before if len(b) == len(sig)]
    if not same:
        return None

    def distance(b: tuple[str, ...]) -> tuple[int, int]:
        differ = [(x, y) for x, y in zip(b, sig, strict=True) if x != y]
        return len(differ), sum(len(_dims(x, y)) for x, y in differ)

    return min(reversed(same), key=distance)


def _library(location: str) -> bool:
    return is_library_path(location.rsplit(":", 1)[0])


def _dims(a: str, b: str) -> list[str]:
    """The dimension changes between two array shapes of one rank and dtype (`8 -> 11`)."""
    ta, _, da = a.partition("[")
    tb, _, db = b.partition("[")
    xs, ys = da.rstrip("]").split(","), db.rstrip("]").split(",")
    if ta != tb or len(xs) != len(ys):
        return [f"{a} -> {b}"]
    return [f"{x} -> {y}" for x, y in zip(xs, ys, strict=True) if x != y]
