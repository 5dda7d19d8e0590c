"""Op sizes that follow from an input's changed dimension: one sequence length, not two causes.

When a batch arrives with another sequence length, ops inside the model change size with it, not
always to the same number: a relative-position table is `2L - 1` wide, a pooled sequence `L / 2`,
a flattened one `B * L`. `python_int` sees sizes that no input carries and names them 'sizes passed
as Python ints'; beside an input whose dimension moved from `n` to `n'`, a size that moved from `d`
to `d'` with `d = a*n + b` and `d' = a*n' + b` (a a whole number or its inverse, b a small offset)
is that input's length again. Folded into the `parameter_shape` cause.
"""

from __future__ import annotations

from fractions import Fraction
from math import isclose, prod

from xlagraph.diagnose.causes import Cause, CauseKind, Change
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import fold_into
from xlagraph.diagnose.shapes import dim_sizes

__all__ = ["RECOGNIZER"]

_MAX_FACTOR = 64  # a batch of up to 64 flattened into the length, or a pooling stride


def _moves(changes: tuple[Change, ...]) -> set[tuple[int, int]]:
    """(old, new) of every dimension that changed in the shape changes."""
    out: set[tuple[int, int]] = set()
    for ch in changes:
        if ch.what != "shape":
            continue
        a, b = dim_sizes(ch.old), dim_sizes(ch.new)
        if a is None or b is None or len(a) != len(b):
            continue
        out |= {(x, y) for x, y in zip(a, b, strict=True) if x != y}
    return out


def _follows(move: tuple[int, int], inputs: set[tuple[int, int]]) -> bool:
    d0, d1 = move
    for n0, n1 in inputs:
        if d0 * n0 == d1 * n1:
            return True  # a size divided by that dimension (16 tokens over 4 -> 8 experts: 4 -> 2)
        slope = Fraction(d1 - d0, n1 - n0)
        whole = slope.denominator == 1 or slope.numerator == 1
        if slope <= 0 or not whole or max(slope, 1 / slope) > _MAX_FACTOR:
            continue
        offset = d0 - slope * n0
        if offset.denominator == 1 and abs(offset) <= max(8, n0):
            return True
    return False


def _ratios(changes: tuple[Change, ...]) -> set[Fraction]:
    """new / old of each changed input's element count and of each changed dimension."""
    out: set[Fraction] = set()
    for ch in changes:
        a, b = dim_sizes(ch.old), dim_sizes(ch.new)
        if a is None or b is None or len(a) != len(b) or not all(a) or not all(b):
            continue
        out.add(Fraction(prod(b), prod(a)))
        out |= {Fraction(y, x) for x, y in zip(a, b, strict=True) if x != y}
    out.discard(Fraction(1))
    return out


def _scaled(cause: Cause, ratios: set[Fraction]) -> bool:
    """Every changed constant is a scalar scaled by one of `ratios` or its inverse: a mean's 1/N
    over the changed elements, a count of them."""
    if cause.kind is not CauseKind.CONSTANT_VALUE or not cause.changes or not ratios:
        return False
    for ch in cause.changes:
        try:
            old, new = float(ch.old.split()[-1]), float(ch.new.split()[-1])  # `f32[] 0.25`
        except (ValueError, IndexError):
            return False
        if old == 0 or new == 0:
            return False
        r = new / old
        if not any(
            isclose(r, float(q), rel_tol=1e-4) or isclose(r, 1 / float(q), rel_tol=1e-4) for q in ratios
        ):
            return False
    return True


def _sizes_only(cause: Cause) -> bool:
    return (
        cause.kind is CauseKind.ATTRIBUTE
        and bool(cause.changes)
        and all(ch.what == "shape" for ch in cause.changes)
    )


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    for i, root in enumerate(pending):
        if root.kind is not CauseKind.PARAMETER_SHAPE:
            continue
        inputs = _moves(root.changes)
        if not inputs:
            continue
        ratios = _ratios(root.changes)
        echoes = [j for j, c in enumerate(pending) if j != i and _scaled(c, ratios)] + [
            j
            for j, c in enumerate(pending)
            if j != i
            and _sizes_only(c)
            and (moves := _moves(c.changes))
            and all(_follows(m, inputs) for m in moves)
        ]
        if not echoes:
            continue
        n = sum(len(pending[j].changes) for j in echoes)
        return fold_into(pending, i, echoes, f"{n} op size(s) or scale(s) inside follow from that shape")
    return NOTHING


RECOGNIZER = Recognizer("size_echo", _recognize)
