"""`pairing`'s reader votes in Python: the readable reference of rust/src/diagnose/reader_votes.rs,
which `pairing.pair_parameters` calls (through `pairing._reader_votes`).
tests/test_reader_votes.py holds the core to it on every fixture pair."""

from __future__ import annotations

from collections.abc import Mapping

from xlagraph.diagnose.comparison import Comparison
from xlagraph.diagnose.pairing import _BLIND as BLIND
from xlagraph.diagnose.shapes import shape_of
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["reader_votes_reference"]


def reader_votes_reference(cmp: Comparison) -> tuple[dict[str, str], frozenset[str]]:
    """`(matched, supported)`: the matcher's pairs of inputs as the votes move them
    (`_matched_inputs`), and the left inputs a matched user reads where it reads their pair."""
    matched, votes = _matched_inputs(cmp)
    supported = frozenset(a for a, b in matched.items() if _supported(cmp, a, b, votes.get(a)))
    return matched, supported


def _supported(cmp: Comparison, a: str, b: str, votes: Mapping[str, int] | None = None) -> bool:
    """A matched user reads `a` and `b` at the same operand position. `votes`: `a`'s reader
    votes (`_matched_inputs`) where counted; a vote for `b` is such a user, found without the walk."""
    left, right, m = cmp.left, cmp.right, cmp.m
    matcher = m.matcher
    if matcher.get(a) in BLIND:
        return False
    if votes and votes.get(b, 0) > 0:
        return True
    twin, lops, rops = m.left.get, left.operands, right.operands
    for u in cmp.users(left).get(a, ()):
        v = twin(u)
        if v is None or matcher.get(u) in BLIND:
            continue
        ou, ov = lops[u], rops[v]
        n = len(ov)
        for k, x in enumerate(ou):
            if x == a and k < n and ov[k] == b:
                return True
        if b in ov and left.instruction(u).opcode in COMMUTATIVE:
            return True
    return False


def _matched_inputs(cmp: Comparison) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """The matcher's pairs of inputs, each moved to the input that most of its matched readers
    read on the other side. A top-down matcher pairs an input through the first reader it meets:
    in a graph with look-alike halves (two views of a batch through one network, `x0` and `x1`
    of a symmetric loss) that reader may be the other half's, while the input's other readers
    are paired with readers of its own twin. Only where the moves trade the matcher's pairs, and
    not for scalars: a learning rate and a weight decay are read by ops alike all over the graph,
    where a count of readers is no evidence. With them, each input's votes (`_supported` reads
    them)."""
    left, right, m = cmp.left, cmp.right, cmp.m
    lnum, rnum = left.param_number, right.param_number
    pairs = {a: b for a in lnum if (b := m.left.get(a)) in rnum}
    moved: dict[str, str] = {}
    counted: dict[str, dict[str, int]] = {}
    users = cmp.users(left)
    for a, b in pairs.items():
        if shape_of(left, a).endswith("[]"):  # a scalar
            continue
        # For each input of B: how many matched readers of `a` read it where their twin reads
        # `a` (the same operand position).
        votes: dict[str, int] = {}
        for u in users.get(a, ()):
            v = m.left.get(u)
            if v is None or m.matcher.get(u) in BLIND:
                continue
            ou, ov = left.operands[u], right.operands[v]
            for k in (k for k, x in enumerate(ou) if x == a):
                if k < len(ov) and (y := ov[k]) in rnum:
                    votes[y] = votes.get(y, 0) + 1
        counted[a] = votes
        if len(votes) < 2:  # all for one input (or none): no other has more votes than `b`
            continue
        best = max(votes, key=lambda x: (votes[x], x == b))
        # Readers split, most of them against the matcher: a pair no reader supports is the
        # matcher's by another path (a sharded input renamed), not a contradicted one.
        if 0 < votes.get(b, 0) < votes[best]:
            moved[a] = best
    # Only a trade among the matcher's own pairs: an input whose readers point at one the matcher
    # left unpaired may be two tensors that shared their data (a model and its EMA copy).
    traded = set(moved.values()) == {pairs[a] for a in moved}
    return ({**pairs, **moved} if traded else pairs), counted
