"""The reference matcher: the phases of `xlagraph.match` (run by the core, rust/src/matching/matcher.rs)
in Python, in the order the core runs them (`tests.oracles.phases()`).

Each phase claims only pairs that are still free, and records its name on the pair:

1. `outputs-exact`: outputs with equal structural hash (`h1`), with their whole subgraphs;
   `outputs-context`: outputs whose data-flow context agrees (`correspondence`), where a changed
   constant or size broke `h1`; `outputs-anchored`: outputs of a shape both sides have as many of, paired by
   the identical subgraphs they read (`match_anchored.py`), where slots would pair a running
   mean over 4 values with one over 16, and so look-alikes (equal `h0`) one side has one more of;
2. `outputs-balanced`: the remaining outputs in order, among equal opcode and shape; when both
   sides keep as many tensors, output `i` with output `i` first where only the element type
   differs, or the shape is a shard of the other's and the collectives differ (tensor
   parallelism halves a weight and its update). Shapes one side has more of wait for
   `outputs-all` (in order, the first would pair with the first wherever the extra ones were
   inserted: a pipeline block put in front shifts every later weight update), and so does a
   value sent to another pipeline stage: a stage's split moves at its send / recv end, and
   matching from there pairs the blocks off by the ones moved;
3. `top-down`: from paired instructions, operands at the same position with the same opcode
   (subgraphs with equal hashes are paired whole);
4. `exact-h1` / `exact-h0`: identical subgraphs anywhere, for hashes seen once on each side;
5. `bottom-up`: instructions whose operands are paired, among users of the counterparts;
6. `outputs-all`: every shape, in order, then `top-down` and `bottom-up` from them;
   `parameters`: the remaining ones by shape, then by number;
7. `top-down-lenient`: an opcode changed in place.

The names recorded on pairs are the core's tags (`outputs` for both output passes, `exact` and
`exact-shape` for the two exact ones).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from collections.abc import Set as AbstractSet

from tests.oracles import phases
from tests.oracles.mappings import Mappings
from tests.oracles.match_anchored import match_outputs_anchored
from tests.oracles.match_bottom_up import match_bottom_up
from tests.oracles.match_exact import match_exact, zip_subgraphs
from tests.oracles.match_follow import follow_parameters
from tests.oracles.match_sum_terms import numbered
from tests.oracles.match_top_down import match_top_down
from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout
from xlagraph.match import Matching, _context_pairs, _layout, _sent
from xlagraph.match.shapes import dims

__all__ = ["PHASES", "match_reference"]


def match_reference(left: CanonicalComputation, right: CanonicalComputation) -> Matching:
    """What `xlagraph.match.match` answers, pair for pair and in the same order."""
    m = Mappings()
    sent = _sent(left) | _sent(right)
    # Other dimensions make a shard only where the graphs run split another way.
    resharded = _layout(left) != _layout(right)
    for name in phases():
        if _complete(left, m.left) or _complete(right, m.right):
            break  # every phase pairs a free instruction of each side: none can add anything
        PHASES[name](left, right, m, sent, resharded)
    return m.freeze()


def _complete(comp: CanonicalComputation, paired: dict[str, str]) -> bool:
    """Every instruction a phase could pair (live ones, parameters) is paired already."""
    if len(paired) < len(comp.order):  # cheap test first: the usual answer while matching
        return False
    return all(map(paired.__contains__, comp.order)) and all(map(paired.__contains__, comp.param_number))


def _shape(comp: CanonicalComputation, name: str) -> str:
    return strip_layout(comp.instruction(name).shape)


def _match_outputs_exact(
    left: CanonicalComputation, right: CanonicalComputation, m: Mappings, context: list[tuple[int, int]]
) -> None:
    """Equal `h1`, in order. Look-alike outputs (equal `h0`) as many on both sides pair the k-th
    with the k-th only: `h1` ranks inputs over the whole graph, so an input dropped before them
    shifts every rank by one and equal `h1` would pair each look-alike with its neighbour. Where
    one side has more of them (outputs dropped or added), `h1`'s ranks shift past the missing
    ones: members the data-flow `context` pairs (either side) are left to `outputs-context` (a
    dropped AdamW second moment, whose computation stays; two look-alike experts' updates)."""
    ctx_l = {left.outputs[i] for i, _ in context}
    ctx_r = {right.outputs[j] for _, j in context}
    place_l, count_l = _look_alike_places(left)
    place_r, count_r = _look_alike_places(right)
    decided = follow_parameters(left, right)
    pool: dict[int, list[tuple[str, int]]] = {}
    for k, b in enumerate(right.outputs):
        pool.setdefault(right.h1[b], []).append((b, place_r[k]))
    for k, a in enumerate(left.outputs):
        if a in decided:  # a look-alike one side has one more of, decided by its own inputs
            b = decided[a]
            if b is not None and a not in m.left and b not in m.right:
                m.add(a, b, "outputs-exact")
                zip_subgraphs(left, right, a, b, "h1", m, "outputs-exact")
            continue
        candidates = pool.get(left.h1[a])
        while candidates and candidates[0][0] in m.right:
            candidates.pop(0)
        if not candidates or a in m.left:
            continue
        n = count_l[left.h0[a]]
        n_r = count_r.get(left.h0[a], 0)
        shifted = n_r > 0 and n != n_r
        if shifted and a in ctx_l:
            continue  # the context pairs it (outputs-context)
        at: int | None = 0
        if shifted:  # free candidates the context pairs with another are left to it
            mine = _written_elsewhere(left, right, a, m)
            free = (x for x, (c, _) in enumerate(candidates) if c not in m.right and c not in ctx_r)
            at = next((x for x in free if candidates[x][0] not in mine), None)
        elif n > 1 and n_r == n:
            free = [(x, place) for x, (c, place) in enumerate(candidates) if c not in m.right]
            at = next((x for x, place in free if place == place_l[k]), None)
        if at is None:
            continue
        b, _ = candidates.pop(at)
        m.add(a, b, "outputs-exact")
        zip_subgraphs(left, right, a, b, "h1", m, "outputs-exact")


def _written_elsewhere(
    left: CanonicalComputation, right: CanonicalComputation, a: str, m: Mappings
) -> set[str]:
    """B's look-alikes of output `a` (its `h0`) that are, inputs by number included, another free
    look-alike of A as written, where `a` itself is none of B's: `h1` ranks inputs by a walk that
    a change elsewhere reorders (one of two towers regrouped), and would pair `a` with its twin's
    counterpart; the inputs as written say that one is its twin's."""
    fam_l = [o for o in dict.fromkeys(left.outputs) if left.h0[o] == left.h0[a]]
    fam_r = [o for o in dict.fromkeys(right.outputs) if right.h0[o] == left.h0[a]]
    nl, nr = numbered(left, fam_l), numbered(right, fam_r)
    if nl is None or nr is None or nl[fam_l.index(a)] in nr:
        return set()
    others = {v for o, v in zip(fam_l, nl, strict=True) if o != a and o not in m.left}
    return {o for o, v in zip(fam_r, nr, strict=True) if v in others}


def _look_alike_places(comp: CanonicalComputation) -> tuple[list[int], dict[int, int]]:
    """Each output's place among the outputs of its `h0`, and each `h0`'s count."""
    count: dict[int, int] = {}
    places = []
    for o in comp.outputs:
        places.append(count.get(comp.h0[o], 0))
        count[comp.h0[o]] = places[-1] + 1
    return places, count


def _match_outputs_context(left: CanonicalComputation, right: CanonicalComputation, m: Mappings) -> None:
    """Outputs whose whole data-flow context agrees (`correspondence`): a constant or a size
    that changed breaks `h1`, not this; pairs only the same opcode and rank."""
    for i, j in _context_pairs(left, right):
        m.add(left.outputs[i], right.outputs[j], "outputs-context")  # where both are still free


def sharded_alike(a: str, b: str) -> bool:
    """Same rank, each dimension equal or split by a whole factor (any element type). A size 1
    is no evidence of a split: `f32[4,1]` and `f32[4,3]` are two task heads, not one sharded."""
    x, y = dims(a), dims(b)
    return (
        x is not None
        and y is not None
        and len(x) == len(y)
        and all(p == q or (min(p, q) > 1 and max(p, q) % min(p, q) == 0) for p, q in zip(x, y, strict=True))
    )


def _match_outputs(
    left: CanonicalComputation,
    right: CanonicalComputation,
    m: Mappings,
    sent: AbstractSet[str],
    resharded: bool,
    balanced_only: bool = True,
) -> None:
    """Outputs are live tensors in creation order: pair them in order, first by opcode and shape,
    then by shape alone (a momentum buffer is `grad` on the first step, `buf * m + grad` after).

    When both sides keep as many tensors, output `i` is first tried with output `i` in another
    element type, or in another shard shape where the graphs' collectives differ (tensor
    parallelism halves a weight and its update); equal shapes pair in order as before. With
    `balanced_only`, a shape that one side has more of is left to the dataflow, and so is a value
    `sent` to another pipeline stage (see the module's docstring). Pairs are made in output order:
    top-down expands the last made first, and the order decides between look-alike branches."""
    slots = {b: k for k, b in enumerate(right.outputs)} if len(left.outputs) == len(right.outputs) else {}
    for same_opcode in (True, False):
        free_right = [o for o in right.outputs if o not in m.right]
        free_left = [o for o in left.outputs if o not in m.left]
        # Shapes and opcodes once per pass, not once per comparison: an output that nothing
        # matches is compared with every later one.
        right_keys = [(_shape(right, b), right.instruction(b).opcode) for b in free_right]
        left_keys = [(_shape(left, a), left.instruction(a).opcode) for a in free_left]
        at = {b: k for k, b in enumerate(free_right)}
        skip: set[str] = set()
        if balanced_only:
            count_r = Counter(s for s, _ in right_keys)
            count_l = Counter(s for s, _ in left_keys)
            skip = {s for s in count_l.keys() | count_r.keys() if count_l[s] != count_r[s]}
        start = 0
        position = {a: i for i, a in enumerate(left.outputs)} if slots else {}
        repeats = _repeats_at(left, right) if slots else {}
        for a, (shape, opcode) in zip(free_left, left_keys, strict=True):
            if a in m.left or a in sent:
                continue
            if slots:
                b = right.outputs[position[a]]
                k = at.get(b)
                if k is not None and b not in m.right and b not in sent:
                    shape_b, opcode_b = right_keys[k]
                    if (
                        opcode == opcode_b
                        and shape != shape_b
                        and sharded_alike(shape, shape_b)
                        and (resharded or dims(shape) == dims(shape_b))
                    ):
                        m.add(a, b, "outputs")
                        start = max(start, k + 1)
                        continue
            if shape in skip:
                continue
            for k in range(start, len(free_right)):
                b = free_right[k]
                shape_b, opcode_b = right_keys[k]
                if b in m.right or shape != shape_b or b in sent:
                    continue
                if any(m.left.get(r, b) != b for r in repeats.get(b, ())):
                    continue
                if same_opcode and opcode != opcode_b:
                    continue
                m.add(a, b, "outputs")
                start = k + 1
                break


def _repeats_at(left: CanonicalComputation, right: CanonicalComputation) -> dict[str, list[str]]:
    """For B's outputs, the tensors A returns a second time in the same slots. A tensor returned
    twice pairs once, so in order every later output of A shifts by a slot onto B's output there;
    while the repeat is paired with another, that output is left to the dataflow. SGD's first-step
    momentum buffer is the gradient itself (returned twice); from the next step on it is a new
    buffer in that slot, written before its parameter's update, and took the update's place
    (top-down then paired FSDP's get-tuple-elements crosswise: a swapped tuple index read as a
    Python value, held_out_49 kestrel)."""
    seen: set[str] = set()
    found: dict[str, list[str]] = {}
    for a, b in zip(left.outputs, right.outputs, strict=True):
        if a in seen:
            found.setdefault(b, []).append(a)
        seen.add(a)
    return found


def _match_parameters(left: CanonicalComputation, right: CanonicalComputation, m: Mappings) -> None:
    free_left = sorted((p for p in left.param_number if p not in m.left), key=left.param_number.__getitem__)
    free_right = sorted(
        (p for p in right.param_number if p not in m.right), key=right.param_number.__getitem__
    )
    for a in free_left:
        for b in free_right:
            if b not in m.right and _shape(left, a) == _shape(right, b):
                m.add(a, b, "parameters")
                break
    rest_left = [p for p in free_left if p not in m.left]
    rest_right = [p for p in free_right if p not in m.right]
    if len(rest_left) == len(rest_right):
        for a, b in zip(rest_left, rest_right, strict=True):
            m.add(a, b, "parameters")


Phase = Callable[[CanonicalComputation, CanonicalComputation, Mappings, AbstractSet[str], bool], None]

# Each phase by the name the core gives it; every phase gets (left, right, m, sent, resharded).
PHASES: dict[str, Phase] = {
    "outputs-exact": lambda left, right, m, sent, resharded: _match_outputs_exact(
        left, right, m, _context_pairs(left, right)
    ),
    "outputs-context": lambda left, right, m, sent, resharded: _match_outputs_context(left, right, m),
    "outputs-anchored": lambda left, right, m, sent, resharded: match_outputs_anchored(left, right, m),
    "outputs-balanced": lambda left, right, m, sent, resharded: _match_outputs(
        left, right, m, sent, resharded
    ),
    "top-down": lambda left, right, m, sent, resharded: match_top_down(left, right, m, True),
    "exact-h1": lambda left, right, m, sent, resharded: match_exact(left, right, m, "h1"),
    "exact-h0": lambda left, right, m, sent, resharded: match_exact(left, right, m, "h0"),
    "bottom-up": lambda left, right, m, sent, resharded: match_bottom_up(left, right, m),
    "outputs-all": lambda left, right, m, sent, resharded: _match_outputs(
        left, right, m, frozenset(), resharded, False
    ),
    "parameters": lambda left, right, m, sent, resharded: _match_parameters(left, right, m),
    "top-down-lenient": lambda left, right, m, sent, resharded: match_top_down(left, right, m, False),
}
