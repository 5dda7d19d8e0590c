"""`attribute`: a Python int reached an op parameter (slice bounds, dimensions, sizes), as when a
step counter or a Python length indexes a tensor: each value is another graph."""

from __future__ import annotations

import re
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.numbers import payload
from xlagraph.diagnose.recognizers._assignments import assigned_from
from xlagraph.diagnose.recognizers._causes import merge, with_number_origin
from xlagraph.diagnose.recognizers._dataflow import opcodes
from xlagraph.diagnose.recognizers._source import source_text
from xlagraph.diagnose.recognizers.tuple_carry import carries_only
from xlagraph.match.shapes import moved_dims

__all__ = ["RECOGNIZER"]

_INT = re.compile(r"-?\d+")


_SLICE = re.compile(r"\[(-?\d+):(-?\d+)(?::(-?\d+))?\]")  # start:limit:stride, as HLO prints slices


def _lengths(text: str) -> set[str]:
    """`{[3:13],[0:32]}` -> {"10", "32"}: the sizes a slice cuts."""
    return {str(-(-(int(hi) - int(lo)) // int(step or 1))) for lo, hi, step in _SLICE.findall(text)}


SIZE_HINT = fix("attribute.size")
FLAG_HINT = fix("attribute.flag")
RANKED_HINT = fix("attribute.size.ranked")
# The best k of a ranking, sliced to a Python count: `argsort(loss)[:k]`, `x.sort()[1][:k]`, `topk(x, k)`.
_RANKED = re.compile(r"\b(argsort|sort)\([^#]*\)(\[\d\])?\s*\[[^\]#]*:|\btopk\(")
_FLAG_VALUES = frozenset({"true", "false", ""})


def _ratios(old: str, new: str) -> set[float]:
    """new/old for each dimension that changed between two shapes of one rank."""
    return {q / p for p, q in moved_dims(old, new) if p and q}


def _truncation(old: str, new: str) -> bool:
    """Slice bounds that moved only their limits (`x[:, :n]` with another n): a length, not a
    window that moved (`x[:, k:k+16]`, whose start changes)."""
    a, b = _SLICE.findall(old), _SLICE.findall(new)
    return (
        bool(a) and len(a) == len(b) and all(x[0] == y[0] and x[2] == y[2] for x, y in zip(a, b, strict=True))
    )


def _resized(old: str, new: str, ratios: set[float]) -> bool:
    """A constant tensor of a size those ops changed to (`s64[20] {...}` -> `s64[28] {...}`: an
    arange over the new length)."""
    changed = _ratios(old.split(" ", 1)[0], new.split(" ", 1)[0])
    return bool(changed) and all(any(abs(r - q) < 1e-4 * q for q in ratios) for r in changed)


def _scaled(old: str, new: str, ratios: set[float]) -> bool:
    """A constant changed by a dimension's ratio, or its inverse (a scale factor: in / out)."""
    try:
        a, b = float(payload(old)), float(payload(new))
    except ValueError:
        return False
    if not a or not b:
        return False
    return any(abs(b / a - r) < 1e-4 * r or abs(a / b - r) < 1e-4 * r for r in ratios)


_INDEXING = frozenset({"slice", "dynamic-slice", "dynamic-update-slice", "pad", "iota", "gather", "scatter"})


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    # (a tuple's shape is its elements': `tuple_carry` folds it into their cause)
    attrs = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.ATTRIBUTE and c.changes and not carries_only(evidence, c)
    ]
    if not attrs:
        return _int_constants(pending)
    # The same int baked as a constant elsewhere (the backward of the indexing) is the same reason.
    olds = {n for i in attrs for ch in pending[i].changes for n in _INT.findall(ch.old)}
    news = {n for i in attrs for ch in pending[i].changes for n in _INT.findall(ch.new)}
    # A slice's length too: a mean over the piece bakes it as its count (a piece of 1 -> 10).
    olds |= {n for i in attrs for ch in pending[i].changes if ch.what == "slice" for n in _lengths(ch.old)}
    news |= {n for i in attrs for ch in pending[i].changes if ch.what == "slice" for n in _lengths(ch.new)}
    same_int = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.CONSTANT_VALUE
        and c.changes
        and all(payload(ch.old) in olds and payload(ch.new) in news for ch in c.changes)
    ]
    # Slices at Python-int bounds (torch.split by lengths): another number of pieces brings the
    # views and reductions over them, and the pieces' sizes passed as scalars (a mean's count).
    if any(ch.what == "slice" for i in attrs for ch in pending[i].changes):
        same_int += [
            i
            for i, c in enumerate(pending)
            if i not in same_int
            and (
                (c.kind is CauseKind.STRUCTURE and opcodes(evidence, c) <= _PIECES)
                or (
                    c.kind in (CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED)
                    and all(ch.old.endswith("[]") or ch.new.endswith("[]") for ch in c.changes)
                    and c.changes
                )
            )
        ]
    # Sizes: a resize or a view to Python-int sizes; its scale factors (in / out) follow.
    sizes = [ch for i in attrs for ch in pending[i].changes if ch.what == "shape"]
    ratios = {r for ch in sizes for r in _ratios(ch.old, ch.new)}
    if len(ratios) <= 16:  # an area (pooling's h * w divisor) scales by two dimensions' ratios
        ratios |= {a * b for a in ratios for b in ratios}
    ratios |= {r**0.5 for r in ratios}  # attention's 1 / sqrt(head_dim) follows the head size
    same_int += [
        i
        for i, c in enumerate(pending)
        if i not in same_int
        and ratios
        and c.kind is CauseKind.CONSTANT_VALUE
        and c.changes
        and all(_scaled(ch.old, ch.new, ratios) or _resized(ch.old, ch.new, ratios) for ch in c.changes)
    ]
    ops = [ins.opcode for i in attrs for _, ins in evidence.instructions(pending[i])]
    examples = [
        f"{ch.left}: {ch.what} {ch.old or '(none)'} -> {ch.new or '(none)'}"
        for i in attrs
        for ch in pending[i].changes
    ]
    indexing = any(op in _INDEXING for op in ops)
    what = (
        "a Python int used to index reached the graph"
        if indexing
        else "a Python value reached an op parameter"
    )
    n = len(examples)
    summary = f"{what}: {n} op parameter(s) changed ({'; '.join(examples[:3])}{' ...' if n > 3 else ''})"
    only_sizes = all(
        ch.what == "shape" or (ch.what == "slice" and _truncation(ch.old, ch.new))
        for i in attrs
        for ch in pending[i].changes
    )
    if only_sizes:
        shown = "; ".join(examples[:3]) + (" ..." if n > 3 else "")
        summary = f"sizes passed as Python ints changed: {n} op(s) changed size ({shown})"
    flags = all({ch.old.strip(), ch.new.strip()} <= _FLAG_VALUES for i in attrs for ch in pending[i].changes)
    if flags and not only_sizes:
        names = sorted({ch.what for i in attrs for ch in pending[i].changes})
        summary = f"an op's flag changed ({', '.join(names)}): {'; '.join(examples[:3])}"
    ranked = only_sizes and any(_RANKED.search(source_text(loc)) for i in attrs for loc in pending[i].sources)
    hint = (RANKED_HINT if ranked else SIZE_HINT) if only_sizes else FLAG_HINT if flags else ""
    cause = merge(CauseKind.ATTRIBUTE, summary, [pending[i] for i in attrs + same_int], hint=hint, count=n)
    splits = [o for loc in cause.sources if (o := assigned_from(loc, _SPLITS, 10))]
    if splits:
        cause = replace(cause, sources=tuple(dict.fromkeys([*splits, *cause.sources]))[:6])
    elif only_sizes:
        # the size's int is computed on the host (`n = min(size, total - start)`): the line to change
        cause = with_number_origin(cause)
    return Recognized((cause,), frozenset(attrs + same_int))


# Ops that slicing into another number of pieces adds or reshapes around them.
_PIECES = frozenset(
    {
        "slice",
        "reshape",
        "broadcast",
        "concatenate",
        "reduce",
        "divide",
        "multiply",
        "add",
        "convert",
        "constant",
    }
)


_SPLITS = re.compile(r"\b(split|tensor_split|chunk|narrow|unbind|split_with_sizes)\(")
# Tensor ops that take a Python int as a shift, an index or a length (a loop bound is not one).
_TENSOR_OP = re.compile(r"\b(roll|narrow|select|flip|diagonal|take|index_select|unfold|movedim|diff)\(")
_INT_SCALAR = re.compile(r"^[su](8|16|32|64)\[\] -?\d+$")


def _int_constants(pending: tuple[Cause, ...]) -> Recognized:
    """Integer scalars baked as constants, other than 0 and 1 (torch_xla bakes those anyway), at a
    user line that passes an int to a tensor op (`torch.roll(x, shifts=k)`, `x.narrow(1, k, n)`):
    an op parameter, only lowered as a constant. A loop bound stays a constant."""
    found = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.CONSTANT_VALUE
        and c.changes
        and all(
            _INT_SCALAR.match(ch.old.strip())
            and _INT_SCALAR.match(ch.new.strip())
            and {payload(ch.old), payload(ch.new)}.isdisjoint({"0", "1"})
            for ch in c.changes
        )
        and any(_TENSOR_OP.search(source_text(loc).split("#", 1)[0]) for loc in c.sources)
    ]
    if not found:
        return NOTHING
    examples = [
        f"{ch.left}: {payload(ch.old)} -> {payload(ch.new)}" for i in found for ch in pending[i].changes
    ]
    summary = f"a Python int reached the graph, baked as an integer constant ({'; '.join(examples[:3])})"
    cause = merge(CauseKind.ATTRIBUTE, summary, [pending[i] for i in found], count=len(examples))
    return Recognized((cause,), frozenset(found))


RECOGNIZER = Recognizer("python_int", _recognize)
