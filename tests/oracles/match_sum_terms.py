"""The terms of a sum that changed places, the reference of the core's rule
(rust/src/matching/sum_terms.rs): a chain of one associative, commutative opcode whose terms are
the same multiset of subgraphs (by `h0`, a term scaled by a scalar constant taken as its value;
terms alike by `h0` by their content with the inputs by number) in another order pairs term to
term by content, the chain's own nodes by depth."""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of

__all__ = ["reordered_terms"]

_CHAINED = frozenset({"add", "multiply", "maximum", "minimum", "and", "or"})
_MIN_TERMS = 3
# The most instructions look-alike terms' cones are walked to tell them apart by their inputs.
_NUMBERED_LIMIT = 4096


def _flatten(comp: CanonicalComputation, root: str) -> tuple[list[str], list[str]]:
    """The chain's nodes (pre-order, `root` first) and its terms, left to right."""
    ins, ops, users = comp.computation.by_name, comp.operands, users_of(comp)
    key = (ins[root].opcode, strip_layout(ins[root].shape))
    nodes: list[str] = []
    terms: list[str] = []

    def walk(n: str) -> None:
        nodes.append(n)
        for o in ops.get(n) or ():
            inner = (
                (ins[o].opcode, strip_layout(ins[o].shape)) == key
                and list(users.get(o, ())) == [n]
                and len(ops.get(o) or ()) == 2
            )
            if inner:
                walk(o)
            else:
                terms.append(o)

    walk(root)
    return nodes, terms


def _scalar_constant(comp: CanonicalComputation, name: str) -> bool:
    ins = comp.computation.by_name
    i = ins[name]
    if i.opcode == "constant":
        return strip_layout(i.shape).endswith("[]")
    ops = comp.operands.get(name) or ()
    return (
        i.opcode == "broadcast"
        and len(ops) == 1
        and ins[ops[0]].opcode == "constant"
        and strip_layout(ins[ops[0]].shape).endswith("[]")
    )


def _peeled(comp: CanonicalComputation, term: str) -> str:
    """A term scaled by a scalar constant stands for its value."""
    ops = comp.operands.get(term) or ()
    if comp.computation.by_name[term].opcode == "multiply" and len(ops) == 2:
        x, y = ops
        cx, cy = _scalar_constant(comp, x), _scalar_constant(comp, y)
        if cy and not cx:
            return x
        if cx and not cy:
            return y
    return term


def numbered(comp: CanonicalComputation, terms: list[str]) -> list[int] | None:
    """Each term's content with its inputs by number (`h0` knows them by shape alone); None
    where their cones hold more than `_NUMBERED_LIMIT` instructions."""
    number, memo = comp.param_number, {}
    for t in terms:
        stack = [(t, False)]
        while stack:
            n, ready = stack.pop()
            if n in memo:
                continue
            ops = comp.operands.get(n) or ()
            if not ready:
                stack.append((n, True))
                stack += [(o, False) for o in ops if o not in memo]
                continue
            memo[n] = hash((comp.h0[n], number.get(n, -1), tuple(memo[o] for o in ops)))
            if len(memo) > _NUMBERED_LIMIT:
                return None
    return [memo[t] for t in terms]


def reordered_terms(
    left: CanonicalComputation, right: CanonicalComputation, a: str, b: str
) -> list[tuple[str, str]] | None:
    """The pairs of the chains at the paired `a` and `b` whose terms changed places, in the
    order to add them; None where they are not such chains (or two of its terms are alike)."""
    op = left.computation.by_name[a].opcode
    if op != right.computation.by_name[b].opcode or op not in _CHAINED:
        return None
    (nl, tl), (nr, tr) = _flatten(left, a), _flatten(right, b)
    if len(tl) < _MIN_TERMS or len(tl) != len(tr) or len(nl) != len(nr):
        return None
    kl = [left.h0[_peeled(left, t)] for t in tl]
    kr = [right.h0[_peeled(right, t)] for t in tr]
    if sorted(kl) != sorted(kr):
        return None
    # Look-alike terms (inputs of one shape) are told apart by the inputs they read, where both
    # sides number them alike; else they have no order of their own to tell.
    if len(set(kl)) != len(kl):
        ul = numbered(left, [_peeled(left, t) for t in tl])
        ur = numbered(right, [_peeled(right, t) for t in tr])
        if ul is None or ur is None or sorted(ul) != sorted(ur) or len(set(ul)) != len(ul):
            return None
        kl, kr = ul, ur
    if kl == kr:
        return None
    pairs = list(zip(nl, nr, strict=True))
    used = [False] * len(tr)
    for x, k in zip(tl, kl, strict=True):
        j = next((j for j in range(len(tr)) if not used[j] and kr[j] == k), None)
        if j is None:
            continue
        used[j] = True
        y = tr[j]
        px, py = _peeled(left, x), _peeled(right, y)
        pairs.append((px, py))
        if px != x and py != y:
            pairs.append((x, y))
    return pairs
