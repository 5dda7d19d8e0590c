"""The live tensors a cause points at: those of the shapes its outputs have, the user's line
that made each and where the program stores it."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from xlagraph.diagnose.attribution.holders import replacing_lines, storing_lines
from xlagraph.diagnose.frames import location, split_frames
from xlagraph.diagnose.recognizers._deciding_loop import MAX_TENSORS
from xlagraph.diagnose.recompile import TensorRef
from xlagraph.ir import Frame, strip_layout
from xlagraph.runlog import LiveTensor

__all__ = ["norm_shape", "pick_tensors", "replacing"]

_EXTRA_CANDIDATES = 2


def norm_shape(shape: str) -> str:
    return strip_layout(shape).replace(" ", "")


def _tensor_ref(t: LiveTensor, cited: tuple[str, ...]) -> TensorRef:
    users, library = split_frames(t.frames)
    line = location(users[0]) if users else ""
    match = "shape and line" if line and line in cited else "shape"
    held_by, stored = _holder(t, users, line)
    return TensorRef(t.id, norm_shape(t.shape), line, match, users, len(library), held_by, stored)


def _holder(t: LiveTensor, users: tuple[Frame, ...], line: str) -> tuple[str, tuple[str, ...]]:
    """What kept `t` alive and the lines that store it there: the first of its holders whose
    storing lines are not just the line that made it (`loss = ...` holds `loss` too)."""
    for h in t.holders:
        stored = tuple(s for s in storing_lines(h, users) if s != line)
        if stored:
            return str(h), stored
    return (str(t.holders[0]), ()) if t.holders else ("", ())


def pick_tensors(
    tensors: tuple[LiveTensor, ...],
    shapes: list[str],
    cited: tuple[str, ...],
    other: tuple[LiveTensor, ...] = (),
    added: int = -1,
) -> tuple[TensorRef, ...]:
    """Live tensors of the given shapes. Those created on a line the cause cites are the answer
    when there are enough of them; otherwise a few candidates of the right shape, those created
    by user code and the most recent first. A tensor that was an output of the `other` graph
    too (pending at its sync: a weight both update) comes last: an output one graph adds is a
    tensor the other did not compute. `added` is how many more outputs the graph has than the
    other: where the cause lists twins beside them (a clone of an updated weight computes what
    the weight's own output does, so the diff cannot say which of the two is new), exactly that
    many fresh tensors of those shapes are the added ones too."""
    wanted = set(shapes)
    # (by id, and by the path that holds it: an updated weight is a new tensor at each step)
    both = {t.id for t in other if t.pending} | {t.holders[0].path for t in other if t.pending and t.holders}
    picked = [t for t in tensors if norm_shape(t.shape) in wanted]
    seen_before = {t.id for t in picked if t.id in both or (t.holders and t.holders[0].path in both)}
    refs = [_tensor_ref(t, cited) for t in picked]
    refs.sort(key=lambda r: (r.id in seen_before, r.match != "shape and line", not r.line, -r.id))
    fresh = [r for r in refs if r.id not in seen_before]
    fresh_shapes = Counter(r.shape for r in fresh)
    if both and len(fresh) in (len(shapes), added) and fresh_shapes <= Counter(shapes):
        # exactly the tensors the other graph did not compute: these are they
        return tuple(r if r.match == "shape and line" else replace(r, match="by elimination") for r in fresh)
    on_line = [r for r in refs if r.match == "shape and line"]
    if len(on_line) >= len(shapes):
        return tuple(on_line[: max(len(shapes), MAX_TENSORS)])
    return tuple(refs[: len(shapes) + _EXTRA_CANDIDATES])


def replacing(tensors: tuple[LiveTensor, ...], shapes: list[str]) -> tuple[str, ...]:
    """The lines that replace the modules holding the live weights of the new shapes."""
    wanted = {norm_shape(s) for s in shapes}
    held = [h for t in tensors if norm_shape(t.shape) in wanted for h in t.holders[:1]]
    return tuple(dict.fromkeys(n for h in held for n in replacing_lines(h)))
