"""Bottom-up matching, the reference of the core's phase: an unpaired instruction whose operands
are paired is paired with the unpaired user of their counterparts that has the same opcode and
agrees on most operands."""

from __future__ import annotations

from itertools import filterfalse

from tests.oracles.mappings import Mappings
from xlagraph.canonical import CanonicalComputation
from xlagraph.match.users import users_of

__all__ = ["match_bottom_up"]


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
