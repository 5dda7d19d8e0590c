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
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._causes import fold_into
from xlagraph.diagnose.recognizers.shared_scalar import merged_into
from xlagraph.diagnose.shapes import dim_sizes
from xlagraph.ir import strip_layout
from xlagraph.match.shapes import moved_dims
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]

_MAX_FACTOR = 64  # a batch of up to 64 flattened into the length, or a pooling stride


# A constant whose length changed with its values (`s64[15] {...} -> s64[23] {...}`: positions
# that torch_xla baked as a constant) is resized like any op: its values change because it grew.
_SIZED = frozenset({"shape", "shape and value"})


def _moves(changes: tuple[Change, ...]) -> set[tuple[int, int]]:
    """(old, new) of every dimension that changed in the shape changes."""
    return {move for ch in changes if ch.what in _SIZED for move in moved_dims(ch.old, ch.new)}


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


def _split_scalar(evidence: Evidence, cause: Cause, inputs: set[tuple[int, int]]) -> bool:
    """Scalar inputs B adds that were one input with another value in A: torch_xla uploads equal
    scalars once, so a value derived from the length (a mean's count of 4 patches) and another
    (an attention scale of 4.0) shared an input while they were equal. Every reader of the new
    input is paired with a reader of one A input, whose other readers B reads from another
    input, and some of those work on sizes that follow the changed dimension: the length moved
    that value away from the other."""
    if cause.kind is not CauseKind.PARAMETER_ADDED or not cause.right or not evidence.entry_match:
        return False
    a, b = evidence.left.entry, evidence.right.entry
    users_a, users_b = users_of(a), users_of(b)
    to_a, to_b = evidence.entry_match, evidence.entry_match_left
    added = [n for n in cause.right if b.instruction(n).opcode == "parameter"]  # (and their readers)
    for x in added or [""]:
        if not x or not strip_layout(b.instruction(x).shape).endswith("[]"):
            return False
        partners = [to_a.get(u) for u in users_b.get(x, [])]
        if not partners or None in partners:
            return False
        shared = {o for p in partners for o in a.operands[p] if a.instruction(o).opcode == "parameter"}
        if len(shared) != 1:
            return False
        others = [
            (u, to_b[u])
            for u in users_a.get(next(iter(shared)), [])
            if u not in partners and u in to_b and x not in b.operands[to_b[u]]
        ]
        moves = [moved_dims(a.instruction(u).shape, b.instruction(v).shape) for u, v in others]
        if not any(m and all(_follows(d, inputs) for d in m) for m in moves):
            return False
    return True


def _merged_scalar(evidence: Evidence, cause: Cause, inputs: set[tuple[int, int]]) -> bool:
    """The other way: scalar inputs of A that B reads from another input of A's (`merged_into`:
    equal values share one upload), where some of their readers' work changes size as the input
    did: a value derived from the length (a mask's offset) now equals the other."""
    if cause.kind is not CauseKind.PARAMETER_REMOVED or not evidence.entry_match:
        return False
    a, b = evidence.left.entry, evidence.right.entry
    users_a, to_b = users_of(a), evidence.entry_match_left
    removed = [n for n in cause.left if n in a.param_number]
    for q in removed or [""]:
        if not q or not merged_into(evidence, q, set())[0]:
            return False
        work = {w for u in users_a.get(q, ()) for w in (u, *users_a.get(u, ()))}
        moves = [moved_dims(a.instruction(w).shape, b.instruction(to_b[w]).shape) for w in work if w in to_b]
        if not any(m and all(_follows(d, inputs) for d in m) for m in moves):
            return False
    return True


def _sized_scalar(evidence: Evidence, cause: Cause, inputs: set[tuple[int, int]]) -> bool:
    """A scalar input of one graph that is a baked 0 or 1 in the other, made by library code only
    (a mask helper's `q_idx - window`, as transformers' masking utilities build it), whose readers
    change size exactly as the input did: a number the library computed from the length (torch_xla
    bakes it once it is 0 or 1), not a value of the user's."""
    if cause.kind is not CauseKind.CONSTANT_VALUE or not cause.changes:
        return False
    if any(ch.what != "input" for ch in cause.changes) or any(map(is_user_location, cause.sources)):
        return False
    mine = {(canon is evidence.right, ins.name) for canon, ins in evidence.instructions(cause)}
    sizes: tuple[set[str], set[str]] = (set(), set())
    for right, name in mine:
        comp = (evidence.right if right else evidence.left).entry
        for user in users_of(comp).get(name, ()):
            if (right, user) not in mine:
                sizes[right].add(comp.instruction(user).shape)
    return any((moves := moved_dims(a, b)) and moves <= inputs for a in sizes[0] for b in sizes[1])


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    for i, root in enumerate(pending):
        if root.kind is not CauseKind.PARAMETER_SHAPE:
            continue
        inputs = _moves(root.changes)
        if not inputs:
            continue
        ratios = _ratios(root.changes)
        echoes = [
            j
            for j, c in enumerate(pending)
            if j != i and (_scaled(c, ratios) or _sized_scalar(evidence, c, inputs))
        ] + [
            j
            for j, c in enumerate(pending)
            if j != i
            and c.attribute_only(*_SIZED)
            and (moves := _moves(c.changes))
            and all(_follows(m, inputs) for m in moves)
        ]
        split = [j for j, c in enumerate(pending) if j != i and _split_scalar(evidence, c, inputs)]
        merged = [j for j, c in enumerate(pending) if j != i and _merged_scalar(evidence, c, inputs)]
        if not echoes and not split and not merged:
            continue
        said = []
        if echoes:
            n = sum(len(pending[j].changes) for j in echoes)
            said.append(f"{n} op size(s) or scale(s) inside follow from that shape")
        if split:
            n = sum(1 for j in split for x in pending[j].right if x in evidence.right.entry.param_number)
            said.append(
                f"{n} scalar input(s) that shared one upload with an equal value in A are their own "
                "now: a value derived from that size (a mean's count) no longer equals the other"
            )
        if merged:
            n = sum(1 for j in merged for x in pending[j].left if x in evidence.left.entry.param_number)
            said.append(
                f"{n} scalar input(s) of A share one upload with an equal value in B: a value derived "
                "from that size now equals the other"
            )
        # An input added renumbers the inputs after it (as `permutation` folds an input order
        # into any added input): so does the one the size split off.
        renumbered = [
            j
            for j, c in enumerate(pending)
            if (split or merged) and c.kind is CauseKind.PARAMETER_PERMUTATION
        ]
        return fold_into(pending, i, echoes + split + merged + renumbered, "; ".join(said))
    return NOTHING


RECOGNIZER = Recognizer("size_echo", _recognize)
