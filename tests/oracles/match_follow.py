"""Look-alike outputs (equal `h0`) one side has more of, both at least two, paired by
the parameters each reads alone (issue 37): the readable twin of the core's
rust/src/matching/phases/follow_params.rs, which `outputs-exact` asks first.

Plain SGD updates read only parameters: `h1` ranks those of the look-alikes after a dropped one
one off, and `outputs-exact` would pair each with its neighbour. Inputs aligned by shape from both
ends (what lies between is what one side lacks) name each one's counterpart; each extra one must
read only inputs the other side lacks or leaves unread (a block of layers trained from a step on
adds several), else nothing is decided here.
"""

from __future__ import annotations

from collections import Counter

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout

# Instructions one output's walk may visit: an update's cone is small; a loss's is not decided.
CONE_BUDGET = 64


def _cone_params(comp: CanonicalComputation, o: str) -> frozenset[str] | None:
    seen, stack, found = {o}, [o], set()
    while stack:
        x = stack.pop()
        if x in comp.param_number:
            found.add(x)
            continue
        for y in comp.operands.get(x, ()):
            if y not in seen:
                if len(seen) == CONE_BUDGET:
                    return None
                seen.add(y)
                stack.append(y)
    return frozenset(found)


def _own(comp: CanonicalComputation, outs: list[str]) -> list[frozenset[str]] | None:
    """The parameters each member reads alone (None: a cone over budget, or a member reading none
    alone)."""
    cones = [_cone_params(comp, o) for o in outs]
    if any(c is None for c in cones):
        return None
    readers = Counter(p for c in cones for p in c)  # type: ignore[union-attr]
    own = [frozenset(p for p in c if readers[p] == 1) for c in cones]  # type: ignore[union-attr]
    return own if all(own) else None


def _families(comp: CanonicalComputation) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for o in dict.fromkeys(comp.outputs):
        found.setdefault(comp.h0[o], []).append(o)
    return found


def follow_parameters(left: CanonicalComputation, right: CanonicalComputation) -> dict[str, str | None]:
    """The counterpart of each member of such a family on the left (None: the extra one)."""
    pl = sorted(left.param_number, key=left.param_number.__getitem__)
    pr = sorted(right.param_number, key=right.param_number.__getitem__)
    if not pl or not pr:
        return {}

    def same(a: str, b: str) -> bool:
        return strip_layout(left.instruction(a).shape) == strip_layout(right.instruction(b).shape)

    n = min(len(pl), len(pr))
    prefix = 0
    while prefix < n and same(pl[prefix], pr[prefix]):
        prefix += 1
    suffix = 0
    while prefix + suffix < n and same(pl[-1 - suffix], pr[-1 - suffix]):
        suffix += 1
    to_r = dict(zip(pl[:prefix], pr[:prefix], strict=True))
    to_r.update((pl[-1 - k], pr[-1 - k]) for k in range(suffix))
    to_l = {b: a for a, b in to_r.items()}
    read_l = {o for x in left.order for o in left.operands.get(x, ())}
    read_r = {o for x in right.order for o in right.operands.get(x, ())}
    fam_r = _families(right)
    decided: dict[str, str | None] = {}
    for h, xs in _families(left).items():
        ys = fam_r.get(h)
        if ys is None or (more := abs(len(xs) - len(ys))) == 0 or min(len(xs), len(ys)) < 2:
            continue
        ml, mr = _own(left, xs), _own(right, ys)
        if ml is None or mr is None:
            continue
        partner: list[int | None] = []
        for c in ml:
            hits = [j for j, d in enumerate(mr) if all(p in to_r for p in c) and d == {to_r[p] for p in c}]
            partner.append(hits[0] if len(hits) == 1 else None)
        taken = Counter(j for j in partner if j is not None)
        if any(t > 1 for t in taken.values()):
            continue
        extra_l = [i for i, j in enumerate(partner) if j is None]
        extra_r = [j for j in range(len(mr)) if j not in taken]
        if len(xs) > len(ys):
            gone = all(to_r.get(p) not in read_r for i in extra_l for p in ml[i])
            ok = not extra_r and len(extra_l) == more and gone
        else:
            gone = all(to_l.get(p) not in read_l for j in extra_r for p in mr[j])
            ok = not extra_l and len(extra_r) == more and gone
        if ok:
            decided.update((a, None if j is None else ys[j]) for a, j in zip(xs, partner, strict=True))
    return decided
