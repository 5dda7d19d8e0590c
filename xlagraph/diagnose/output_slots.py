"""Output slots the matching left over on both sides, paired where they are one output: the same
shape, another shard shape (whole factors), or the same dimensions in another float type.
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.pairing import plausible
from xlagraph.diagnose.shapes import FLOAT_TYPES, dims_of, element_type, shape_of, whole_factors


def one_tensor(a: str, b: str) -> bool:
    """Shapes one output can take on two steps: the same, another size along a dimension or
    by whole factors (a batch, a shard), or the same dimensions in another float type."""
    if a == b:  # most outputs of two steps: no need to split the shapes
        return True
    if dims_of(a) == dims_of(b):
        return a == b or {element_type(a), element_type(b)} <= FLOAT_TYPES
    return plausible(a, b) or _resharded(a, b)


def crosses(pair: tuple[int, int], pairs: list[tuple[int, int]]) -> bool:
    """Whether slot pair (i, j) crosses one of `pairs`: the order of one side is not the other's."""
    i, j = pair
    return any((a - i) * (b - j) < 0 for a, b in pairs)


def _resharded(a: str, b: str) -> bool:
    """Another shard shape of one tensor: same element type, other dimensions by whole factors."""
    return element_type(a) == element_type(b) and dims_of(a) != dims_of(b) and whole_factors(a, b)


def same_slots(
    left: CanonicalComputation, right: CanonicalComputation, added: list[int], removed: list[int]
) -> list[tuple[int, int]]:
    """With as many outputs on both sides, a left-over slot `i` on both sides is one output when
    its shape is the same, resharded by whole factors or retyped (a partitioned program returns
    each gradient all-reduced where the other returns the dot itself); pairs are taken out of
    `added` and `removed` in place."""
    if len(left.outputs) != len(right.outputs):
        return []
    pairs = []
    for i in [i for i in removed if i in added]:
        sa, sb = shape_of(left, left.outputs[i]), shape_of(right, right.outputs[i])
        if (
            sa == sb
            or _resharded(sa, sb)
            or (dims_of(sa) == dims_of(sb) and {element_type(sa), element_type(sb)} <= FLOAT_TYPES)
        ):
            pairs.append((i, i))
            removed.remove(i)
            added.remove(i)
    return pairs


def pair_resharded(
    left: CanonicalComputation, right: CanonicalComputation, added: list[int], removed: list[int]
) -> list[tuple[int, int]]:
    """Left-over slots, in order, whose shapes differ by whole factors; pairs are taken out of
    `added` and `removed` in place."""
    pairs: list[tuple[int, int]] = []
    start = 0
    for i in list(removed):
        sa = shape_of(left, left.outputs[i])
        k = next(
            (k for k in range(start, len(added)) if _resharded(sa, shape_of(right, right.outputs[added[k]]))),
            None,
        )
        if k is not None:
            pairs.append((i, added[k]))
            removed.remove(i)
            del added[k]
            start = k
    return pairs


def pair_slots(
    left: CanonicalComputation,
    right: CanonicalComputation,
    added: list[int],
    removed: list[int],
    same_type: bool,
) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Output slots left over on both sides, of equal shape and in order, are one output computed
    another way (a momentum buffer is `grad` on the first step, `buf * m + grad` after), not one
    tensor added and another removed; with `same_type=False`, equal dimensions in another element
    type (a dtype change)."""
    still_added = list(added)
    still_removed: list[int] = []
    pairs: list[tuple[int, int]] = []
    start = 0
    for i in removed:
        shape = shape_of(left, left.outputs[i])
        key = shape if same_type else dims_of(shape)
        k = next(
            (
                k
                for k in range(start, len(still_added))
                if (s := shape_of(right, right.outputs[still_added[k]])) == key
                or (
                    not same_type
                    and dims_of(s) == key
                    and element_type(s) != element_type(shape)
                    and {element_type(s), element_type(shape)} <= FLOAT_TYPES
                )
            ),
            None,
        )
        if k is None:
            still_removed.append(i)
        else:
            pairs.append((i, still_added[k]))
            del still_added[k]
            start = k
    if same_type:  # out of order, a shape left once on each side is still that one slot
        shapes_l = [shape_of(left, left.outputs[i]) for i in still_removed]
        shapes_r = [shape_of(right, right.outputs[j]) for j in still_added]
        lone = [
            (i, still_added[shapes_r.index(sh)])
            for i, sh in zip(still_removed, shapes_l, strict=True)
            if shapes_l.count(sh) == 1 and shapes_r.count(sh) == 1
        ]
        pairs += lone
        still_removed = [i for i in still_removed if i not in {a for a, _ in lone}]
        still_added = [j for j in still_added if j not in {b for _, b in lone}]
    return pairs, still_added, still_removed
