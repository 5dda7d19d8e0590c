"""Bottom-up matching: an unpaired instruction whose operands are paired is paired with the
unpaired user of their counterparts that has the same opcode and agrees on most operands."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import filterfalse
from weakref import WeakKeyDictionary

from xlagraph.canonical import CanonicalComputation
from xlagraph.match.mappings import Mappings

__all__ = ["match_bottom_up", "users_of"]

try:
    from xlagraph.match import _compiled
except ImportError:  # a compiled core without the matcher
    _compiled = None  # type: ignore[assignment]


# Built once per computation and shared by the matchers and the diagnosis (read-only).
_USERS: WeakKeyDictionary[CanonicalComputation, Mapping[str, list[str]]] = WeakKeyDictionary()


def users_of(comp: CanonicalComputation) -> Mapping[str, list[str]]:
    """Users of each instruction, in `comp.order`; shared between callers, so never modify it
    (nor a list it gives: from the core's copy, a mapping that makes each list when asked)."""
    users = _USERS.get(comp)
    if users is None and _compiled is not None:
        users = _compiled.users(comp)  # the same dict, from the matcher's copy of `comp`
        if users is not None:
            _USERS[comp] = users
    if users is None:
        built: dict[str, list[str]] = {}
        for name in comp.order:
            for o in comp.operands[name]:
                if o in built:
                    built[o].append(name)
                else:
                    built[o] = [name]
        users = _USERS[comp] = built
    return users


def match_bottom_up(left: CanonicalComputation, right: CanonicalComputation, m: Mappings) -> None:
    left_users = users_of(left)
    for b in filterfalse(m.right.__contains__, right.order):  # lazy: tested as each is reached
        ob = right.operands[b]
        mapped = [m.right[o] for o in ob if o in m.right]
        if not mapped:
            continue
        ib = right.instruction(b)
        rank = _rank(ib.shape)
        best, best_score = None, 0
        for counterpart in mapped:
            for a in left_users.get(counterpart, ()):
                ia = left.instruction(a)
                if a in m.left or ia.opcode != ib.opcode or _rank(ia.shape) != rank:
                    continue
                oa = left.operands[a]
                score = 2 * sum(1 for x, y in zip(oa, ob, strict=False) if m.left.get(x) == y)
                score += ia.shape == ib.shape
                if score > best_score:
                    best, best_score = a, score
        if best is not None:
            m.add(best, b, "bottom-up")


def _rank(shape: str) -> tuple[str, int]:
    """Element type and rank: a batch-size change keeps both, a different tensor rarely does."""
    head, _, dims = shape.partition("[")
    return head, dims.count(",") + (0 if dims.startswith("]") else 1)
