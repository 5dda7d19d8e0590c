"""Inputs paired from evidence, not from shapes alone.

The first evidence is each input's whole data-flow context (`xlagraph.match.correspondence`:
colour refinement that leaves out positions, constant values and sizes). Beside it, a pair of
parameters counts as evidence only when a matched user reads both at the same operand position
(or the matcher paired them inside an identical subgraph, and nothing else on either side looks
like them). Evidence pairs that cross each other are a permutation; everything else keeps
its position: between two evidence pairs, the inputs left over are aligned in order (equal shapes
first, then by position), so inputs that are only shifted by an inserted one are not "moved".
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING

from xlagraph import _core
from xlagraph._kept import kept_while_alive
from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.collectives import collectives
from xlagraph.diagnose.inserted_run import kept_in_place, shifted_blocks, shifted_weights
from xlagraph.diagnose.shapes import dim_sizes, dims_of, element_type, shape_of, whole_factors
from xlagraph.match._compiled import side
from xlagraph.match.correspondence import correspond
from xlagraph.match.users import users_of

if TYPE_CHECKING:
    from xlagraph.diagnose.comparison import Comparison

__all__ = ["pair_parameters", "plausible"]

# Matchers that pair whole identical subgraphs: interchangeable inputs may be paired either way.
_IDENTITY = frozenset({"exact", "exact-shape"})
# Matchers that pair parameters without looking at what reads them.
_BLIND = frozenset({"parameters", "outputs", "top-down-lenient"})


def _reader_votes(cmp: Comparison) -> tuple[dict[str, str], frozenset[str]]:
    """`(matched, supported)`: the matcher's pairs of inputs, each moved to the input that most of
    its matched readers read on the other side, and the left inputs a matched user reads at the
    same operand position as their pair (or, commutative, beside it). A top-down matcher pairs an
    input through the first reader it meets: in a graph with look-alike halves (two views of a
    batch through one network, `x0` and `x1` of a symmetric loss) that reader may be the other
    half's, while the input's other readers are paired with readers of its own twin. Moved only
    where the readers split and most of them are against the matcher (a pair no reader supports
    is the matcher's by another path: a sharded input renamed), only where the moves trade the
    matcher's own pairs (an input whose readers point at one the matcher left unpaired may be two
    tensors that shared their data: a model and its EMA copy), and not for scalars (a learning
    rate and a weight decay are read by ops alike all over the graph, where a count of readers
    is no evidence). The core counts (rust/src/diagnose/reader_votes.rs; the readable rule is
    tests/oracles/reader_votes_reference.py): some 2,600 inputs a diff."""
    left, m = cmp.left, cmp.m
    core = left.core  # type: ignore[attr-defined]
    matched, supported = _core.reader_votes(core, side(left), side(cmp.right), m.left, m.matcher, _BLIND)
    return matched, supported


@kept_while_alive
def _distinguishable(comp: CanonicalComputation) -> frozenset[str]:
    """Parameters that nothing else on their side resembles: same shape and users computing the
    same thing (structurally, `h0`) make inputs interchangeable, e.g. the Q, K and V weights of
    one layer or the seeds of two dropouts. Paired as parts of identical subgraphs, such inputs
    may be paired either way, so that is no evidence of a permutation; their positions stand.
    A property of `comp` alone: kept for a report's other diffs."""
    # The rule runs on the core's handle (rust/src/canon/handle.rs `lone_parameters`).
    return comp.core.lone_parameters()  # type: ignore[attr-defined]


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The largest subset of (left, right) pairs in which both sides increase (patience sort)."""
    # Chains are kept by their last element and a link to its predecessor: copying each chain
    # and scanning them linearly was O(n^2) time and memory (15K inputs: 40 s, ~1 GB).
    pairs = sorted(pairs)
    tails: list[int] = []  # right side of the last pair of the best chain of each length, increasing
    ends: list[int] = []  # index in `pairs` of that last pair
    prev: list[int] = []  # index of each pair's predecessor in its chain, -1 for none
    for i, (_, right) in enumerate(pairs):
        k = bisect.bisect_left(tails, right)
        prev.append(ends[k - 1] if k else -1)
        if k == len(tails):
            tails.append(right)
            ends.append(i)
        else:
            tails[k], ends[k] = right, i
    out: list[tuple[int, int]] = []
    i = ends[-1] if ends else -1
    while i >= 0:
        out.append(pairs[i])
        i = prev[i]
    return out[::-1]


def _align_gap(
    lefts: list[tuple[int, str]],
    rights: list[tuple[int, str]],
    resized: Callable[[str, str], bool],
) -> list[tuple[int, int]]:
    """Pairs of positions between two anchors: same shape in order first (an LCS), then what is
    left between those, by position when the counts agree."""
    n, k = len(lefts), len(rights)
    if n == k:
        return [(a, b) for (a, _), (b, _) in zip(lefts, rights, strict=True)]
    table = [[0] * (k + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(k - 1, -1, -1):
            if lefts[i][1] == rights[j][1]:
                table[i][j] = 1 + table[i + 1][j + 1]
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    same: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < k:
        if lefts[i][1] == rights[j][1]:
            same.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    out = [(lefts[i][0], rights[j][0]) for i, j in same]
    bounds = [(-1, -1), *same, (n, k)]
    for (i0, j0), (i1, j1) in itertools.pairwise(bounds):
        sub_l, sub_r = lefts[i0 + 1 : i1], rights[j0 + 1 : j1]
        if len(sub_l) == len(sub_r):
            out += [(a, b) for (a, sa), (b, sb) in zip(sub_l, sub_r, strict=True) if resized(sa, sb)]
        else:  # same element type and rank: a resized input, else added / removed
            for a, sa in sub_l:
                taken = {y for _, y in out}
                candidates = [(b, sb) for b, sb in sub_r if _similar(sa, sb) and b not in taken]
                # A split by a whole factor (a weight sharded) before any other resize.
                hit = next((b for b, sb in candidates if whole_factors(sa, sb)), None)
                if hit is None:
                    hit = next((b for b, sb in candidates if resized(sa, sb)), None)
                if hit is not None:
                    out.append((a, hit))
    return out


def _regrouped(cmp: Comparison) -> bool:
    """The two graphs' collectives differ in kind or groups (another parallel layout)."""
    a = sorted((c.kind, c.groups) for c in collectives(cmp.lm))
    b = sorted((c.kind, c.groups) for c in collectives(cmp.rm))
    return a != b


def plausible(a: str, b: str) -> bool:
    """One tensor resized: the same shape, a shard of it, or one dimension changed (a batch, a
    sequence length); two dimensions resized by other than whole factors are two tensors."""
    if a == b:
        return True
    if not _similar(a, b):
        return False
    x, y = dim_sizes(a), dim_sizes(b)
    if x is None or y is None:
        return True
    if len(x) != len(y):
        return False
    return whole_factors(a, b) or sum(p != q for p, q in zip(x, y, strict=True)) <= 1


def _similar(a: str, b: str) -> bool:
    return element_type(a) == element_type(b) and dims_of(a).count(",") == dims_of(b).count(",")


@kept_while_alive
def _locations(comp: CanonicalComputation) -> dict[str, str]:
    """`file:line` each parameter's metadata points to (where the tensor was first used); kept
    per computation, as `_distinguishable` is: a report's graphs are each in several diffs."""
    by_name = comp.computation.by_name
    return {p: (md.location if (md := by_name[p].metadata) else "") for p in comp.param_number}


def _other_tensor(
    a: str, b: str, lloc: dict[str, str], rloc: dict[str, str], by_loc: set[tuple[str, str]], shape: str
) -> bool:
    """`a` and `b` come from different lines while B has an input of that shape from `a`'s line:
    the matcher paired two different tensors (a learning rate with a momentum factor)."""
    la, lb = lloc.get(a, ""), rloc.get(b, "")
    return bool(la and lb and la != lb and (shape, la) in by_loc)


def _unique_pairs(
    left: Iterable[tuple[int, Hashable]], right: Iterable[tuple[int, Hashable]]
) -> list[tuple[int, int]]:
    """Pairs of (number, key) items, one a side, whose key no other item of either side has."""
    groups: tuple[dict[Hashable, list[int]], dict[Hashable, list[int]]] = ({}, {})
    for by_key, items in zip(groups, (left, right), strict=True):
        for n, key in items:
            by_key.setdefault(key, []).append(n)
    mine, theirs = groups
    return [(ns[0], theirs[k][0]) for k, ns in mine.items() if len(ns) == 1 and len(theirs.get(k, ())) == 1]


def _signature(comp: CanonicalComputation, p: str) -> tuple[str, tuple[int, ...]]:
    """What makes inputs look alike (`_distinguishable`): the shape, what the readers compute."""
    return shape_of(comp, p), _readers(comp, [p])


def _lone_twins(
    cmp: Comparison, chosen: list[tuple[int, int]], lname: dict[int, str], rname: dict[int, str]
) -> list[tuple[int, int]]:
    """Inputs left over on both sides that are alike (one shape, users computing the same thing)
    and the only ones of their kind: the same tensor, numbered elsewhere because inputs were
    inserted before it (a dropout seed after the clipping's new inputs), not one added and one
    removed. Paired by position, this claims no permutation."""
    used_l = {a for a, _ in chosen}
    used_r = {b for _, b in chosen}
    return _unique_pairs(
        ((n, _signature(cmp.left, p)) for n, p in lname.items() if n not in used_l),
        ((n, _signature(cmp.right, p)) for n, p in rname.items() if n not in used_r),
    )


def _contested(cmp: Comparison, context: Mapping[str, str]) -> set[str]:
    """Left inputs whose context pair the matcher contradicts where the input it would displace
    has no context partner of its own. An output added or dropped changes the context of the
    inputs near it: look-alikes (the norms of two blocks, one of them now trained) then trade
    colours, and a context pair joins two different tensors while the one at its old place is
    left alone. A real move displaces inputs that are context-paired elsewhere (a cycle)."""
    m, left, right = cmp.m, cmp.left.param_number, cmp.right.param_number
    paired_r = set(context.values())
    # The walk of reordered sums only where some context pair disagrees (rare): it reads every tag.
    disagree = {a for a, b in context.items() if m.left.get(a) != b}
    out = set(_in_reordered_terms(cmp) & disagree) if disagree else set()
    for a, b in context.items():
        b0, a0 = m.left.get(a), m.right.get(b)
        moves_b0 = b0 in right and b0 != b and m.matcher.get(a) not in _BLIND and b0 not in paired_r
        moves_a0 = a0 in left and a0 != a and m.matcher.get(a0) not in _BLIND and a0 not in context
        if moves_b0 or moves_a0:
            out.add(a)
    return out


# The matcher's tag on the terms of a sum paired by content (rust/src/matching/sum_terms.rs).
_SUM_TERMS = "sum-terms"


def _in_reordered_terms(cmp: Comparison) -> frozenset[str]:
    """Left inputs read in the terms of a sum whose terms changed places, which the matcher paired
    by content: a term's place in the sum is its data-flow context, so look-alike terms told
    apart only by the inputs they read (one per expert of a mixture) trade contexts when they
    trade places, and the context pairs their inputs crossed while no input moved. There the
    matcher's pairs (the terms by the inputs as numbered, then top-down) are the evidence."""
    left, m = cmp.left, cmp.m
    stack = [a for a, t in m.matcher.items() if t == _SUM_TERMS]
    seen = set(stack)
    found = set()
    while stack and len(seen) <= _TERMS_LIMIT:
        x = stack.pop()
        if x in left.param_number:
            found.add(x)
            continue
        for o in left.operands.get(x, ()):
            if o not in seen:
                seen.add(o)
                stack.append(o)
    return frozenset(found) if not stack else frozenset()


# How many instructions the terms of reordered sums may hold: past it, no input is taken from them.
_TERMS_LIMIT = 4096


# How far an output's cone is walked back to its inputs: an update of its own (an SGD or Adam
# step: a handful of ops) or one loss's gradient (a cross-entropy's backward with its masks and
# constants: some 45 pairs in held_out_40's look-alike losses, 65 to 96 with the forward's
# log-softmax and label smoothing); a larger cone is no evidence of where its inputs went.
_CONE_LIMIT = 128


def _zipped(cmp: Comparison, a: str, b: str) -> dict[str, str] | None:
    """The inputs of output `a`'s cone paired with those of `b`'s, the two walked together by
    operand position through the same ops; None past `_CONE_LIMIT` ops or where an input would
    be paired twice."""
    left, right = cmp.left, cmp.right
    out: dict[str, str] = {}
    seen, stack = {(a, b)}, [(a, b)]
    while stack:
        x, y = stack.pop()
        if x in left.param_number or y in right.param_number:
            if x not in left.param_number or y not in right.param_number or out.setdefault(x, y) != y:
                return None
            continue
        ox, oy = left.operands.get(x, ()), right.operands.get(y, ())
        if len(ox) != len(oy):
            continue
        for u, v in zip(ox, oy, strict=True):
            if left.keys.get(u) == right.keys.get(v) and (u, v) not in seen:
                seen.add((u, v))
                stack.append((u, v))
                if len(seen) > _CONE_LIMIT:
                    return None
    return out if len(set(out.values())) == len(out) else None


def _followed_outputs(cmp: Comparison, corr) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Input pairs read off the outputs the context pairs (untied) where the matching pairs them
    otherwise: `_zipped` of each such pair of outputs, kept where no two agree to disagree."""
    left, right, m = cmp.left, cmp.right, cmp.m
    out: dict[str, str] = {}
    for i, j in corr.outputs.items():
        a, b = left.outputs[i], right.outputs[j]
        if i in corr.tied or m.left.get(a) == b:
            continue
        for x, y in (_zipped(cmp, a, b) or {}).items():
            if out.setdefault(x, y) != y:
                out[x] = ""
    out = {x: y for x, y in out.items() if y}
    return out if len(set(out.values())) == len(out) else {}


def _split(cmp: Comparison, a: str, b: str) -> bool:
    """A's input `a` is read, where the matcher pairs its readers, as `b` and also as another input
    of its shape that the matcher pairs with nothing of A's: one tensor in A that is two in B (a
    model and the EMA copy that shared its data until first updated). Either of B's two is `a`,
    so their readers' votes are no evidence of a move: positions decide. Only readers paired with
    one computing the same thing count (look-alike blocks whose updates the matcher crossed are
    not one tensor), and not scalars (a learning rate is read alike all over the graph)."""
    left, right, m = cmp.left, cmp.right, cmp.m
    shape = left.compared_shapes[a]
    if shape.endswith("[]"):
        return False
    readers = cmp.users(left).get(a, ())
    if len(readers) <= len(cmp.users(right).get(b, ())):
        return False  # `a` stood for more than `b`: it has more readers
    read = set()
    for u in readers:
        v = m.left.get(u)
        if v is None or left.h0.get(u) != right.h0.get(v):
            continue
        theirs = right.operands.get(v, ())
        read |= {theirs[k] for k, o in enumerate(left.operands.get(u, ())) if o == a and k < len(theirs)}
    others = {
        x
        for x in read - {b}
        if x in right.param_number
        and right.compared_shapes[x] == shape
        and m.right.get(x) not in left.param_number
    }
    return bool(others)


def _readers(comp: CanonicalComputation, names: Iterable[str]) -> tuple[int, ...]:
    """What the readers of `names` compute (`h0`: the subtree, whichever inputs it reads), sorted."""
    users = users_of(comp)
    return tuple(sorted(comp.h0.get(u, comp.keys.get(u, 0)) for n in names for u in users.get(n, ())))


@kept_while_alive
def _look_alikes(comp: CanonicalComputation) -> dict[tuple[int, ...], list[str]]:
    """The parameters that resemble others (`_distinguishable`'s likeness: the same shape, readers
    computing the same thing), by what their readers' readers compute; kept per computation."""
    likeness: dict[tuple[str, tuple[int, ...]], list[str]] = {}
    for p in comp.param_number:
        likeness.setdefault(_signature(comp, p), []).append(p)
    users = users_of(comp)
    out: dict[tuple[int, ...], list[str]] = {}
    for group in likeness.values():
        if len(group) > 1:
            for p in group:
                out.setdefault(_readers(comp, users.get(p, ())), []).append(p)
    return out


def _firm(cmp: Comparison, a: str, b: str, lone_l: frozenset[str], lone_r: frozenset[str]) -> bool:
    """Look-alike inputs (`_distinguishable`'s: same shape, readers computing the same thing) that
    whole identical subgraphs pair, where what their readers' readers compute is the same on both
    sides and no other look-alike's on either: meters updated alike (`0.9 * m`) with their own
    statistics (`+ 0.1 * grad_rms`, `+ 0.1 * weight_norm`), listed in another order. Evidence that
    positions do not overrule; Q, K and V weights whose readers' readers agree stay interchangeable."""
    if a in lone_l and b in lone_r:
        return False
    left, right = cmp.left, cmp.right
    deeper = _readers(left, users_of(left).get(a, ()))
    if deeper != _readers(right, users_of(right).get(b, ())):
        return False
    return all(
        p in lone or _look_alikes(comp).get(deeper, [p]) == [p]
        for comp, p, lone in ((left, a, lone_l), (right, b, lone_r))
    )


class _Weights:
    """The inputs each side's step updates (its weights), asked of the core only when a rule needs them."""

    def __init__(self, left: CanonicalComputation, right: CanonicalComputation) -> None:
        self._sides = {"left": left, "right": right}
        self._found: dict[str, set[str]] = {}

    def __call__(self, side: str) -> set[str]:
        if side not in self._found:
            core = self._sides[side].core  # type: ignore[attr-defined]
            self._found[side] = set(core.updated_inputs().values())
        return self._found[side]


def pair_parameters(cmp: Comparison) -> tuple[list[tuple[str, str]], bool]:
    """(pairs of parameter names, whether the evidence shows a permutation)."""
    left, right, m = cmp.left, cmp.right, cmp.m
    lnum, rnum = left.param_number, right.param_number
    lname = {n: p for p, n in lnum.items()}
    rname = {n: p for p, n in rnum.items()}
    lone_l, lone_r = _distinguishable(left), _distinguishable(right)
    lloc, rloc = _locations(left), _locations(right)
    ls, rs = left.compared_shapes, right.compared_shapes
    by_loc = {(rs[b], loc) for b, loc in rloc.items() if loc}
    # Where the collectives differ the graphs run split another way: a tensor is then the same
    # tensor only as a shard of it (768 -> 384), never resized by another amount (256 -> 96).
    sharded = _regrouped(cmp)
    resized = whole_factors if sharded else plausible
    # First the inputs' whole data-flow context (`correspondence`): it survives an output added
    # or dropped, a constant or a batch size changed; then a matched user reading both.
    corr = correspond(left, right)
    contested = _contested(cmp, corr.params)
    evidence = [
        (lnum[a], rnum[b])
        for a, b in corr.params.items()
        if a not in corr.tied and a not in contested and resized(ls[a], rs[b])
    ]
    context = dict(evidence)
    # Inputs the context leaves tied (look-alike updates, once a batch size changed) go where the
    # outputs of their small cones go, each by its operand position, where the context pairs
    # those outputs and the matching crossed them.
    taken_l, taken_r = {a for a, _ in evidence}, {b for _, b in evidence}
    evidence += [
        (lnum[a], rnum[b])
        for a, b in _followed_outputs(cmp, corr).items()
        if a in corr.tied
        and lnum[a] not in taken_l
        and rnum[b] not in taken_r
        and resized(ls[a], rs[b])
    ]
    taken_l, taken_r = {a for a, _ in evidence}, {b for _, b in evidence}
    matched, supported = _reader_votes(cmp)
    evidence += [
        (lnum[a], rnum[b])
        for a in lnum
        if (b := matched.get(a)) in rnum
        and a in supported
        and lnum[a] not in taken_l
        and rnum[b] not in taken_r
        and (
            m.matcher.get(a) not in _IDENTITY
            or (a in lone_l and b in lone_r)
            or _firm(cmp, a, b, lone_l, lone_r)
        )
        and not _other_tensor(a, b, lloc, rloc, by_loc, ls[a])
        and resized(ls[a], rs[b])
        and not (len(rnum) > len(lnum) and _split(cmp, a, b))
    ]
    # Look-alike blocks with one more of them on a side: positions decide what evidence cannot.
    # (A set: membership in the list was quadratic, a second of `report` on 20 variants.)
    paired = set(evidence)
    firm = {
        lnum[a]: rnum[b]
        for a, b in matched.items()
        if b in rnum and (lnum[a], rnum[b]) in paired and _firm(cmp, a, b, lone_l, lone_r)
    }
    in_place = kept_in_place(left, right, evidence, {**context, **firm})
    if in_place is not None:
        evidence = in_place
    # A stage's window shifted over look-alike blocks: the block gained and the one lost stay unpaired.
    lost: set[int] = set()
    gained: set[int] = set()
    weights = _Weights(left, right)
    if in_place is None and (shifted := shifted_blocks(left, right, evidence, weights)) is not None:
        evidence, lost, gained = shifted
    anchors = _longest_increasing(evidence)
    permuted = len(anchors) < len(evidence)
    chosen = list(anchors) if not permuted else list(evidence)
    if not permuted:
        bounds = [(-1, -1), *sorted(anchors), (max(lname, default=-1) + 1, max(rname, default=-1) + 1)]
        for (l0, r0), (l1, r1) in itertools.pairwise(bounds):
            if l1 - l0 < 2 or r1 - r0 < 2:
                continue  # nothing between the anchors on a side: nothing to pair (most gaps)
            gl = [(n, ls[lname[n]]) for n in range(l0 + 1, l1) if n in lname and n not in lost]
            gr = [(n, rs[rname[n]]) for n in range(r0 + 1, r1) if n in rname and n not in gained]
            if not (gl and gr):
                continue
            # The same shape made at the same line is the same tensor, wherever it sits: pairs of
            # one shape and one source line, where that combination is unique on both sides.
            same = _unique_pairs(
                ((n, (shape, lloc[lname[n]])) for n, shape in gl if lloc[lname[n]]),
                ((n, (shape, rloc[rname[n]])) for n, shape in gr if rloc[rname[n]]),
            )
            chosen += same
            paired_l, paired_r = {a for a, _ in same}, {b for _, b in same}
            chosen += _align_gap(
                [x for x in gl if x[0] not in paired_l], [y for y in gr if y[0] not in paired_r], resized
            )
        chosen += _lone_twins(cmp, chosen, lname, rname)
        # Weights called resized that a shift of the run pairs with their own shapes: a window
        # moved over blocks of other sizes, one gained and one lost (no shape changed).
        # Not where the graphs run split another way: a sharded weight's shard is the weight.
        if not lost and not sharded and (moved := shifted_weights(left, right, chosen, weights)) is not None:
            chosen, lost, gained = moved
    else:  # a real permutation: the rest by the matching, else left out
        used_l = {a for a, _ in chosen}
        used_r = {b for _, b in chosen}
        # Look-alikes the context found interchangeable (two weights nothing reads any more)
        # keep their positions: the matching would pair them across, a move nothing shows.
        tied = sorted(
            (lnum[a], rnum[b])
            for a, b in corr.params.items()
            if a in corr.tied and a not in contested and resized(ls[a], rs[b])
        )
        for a, b in tied:
            if a not in used_l and b not in used_r:
                chosen.append((a, b))
                used_l.add(a)
                used_r.add(b)
        for a, b in matched.items():
            if (
                a in lnum
                and b in rnum
                and lnum[a] not in used_l
                and rnum[b] not in used_r
                and resized(ls[a], rs[b])
            ):
                chosen.append((lnum[a], rnum[b]))
                used_l.add(lnum[a])
                used_r.add(rnum[b])
    return sorted((lname[a], rname[b]) for a, b in chosen if a not in lost and b not in gained), permuted
