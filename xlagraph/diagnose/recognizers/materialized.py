"""`state_init` for tensors created before the loop (`torch.zeros(n, device=...)` for a running
mean, a step counter, a dict of statistics): a device op before the first sync is pending until
then, so the first graph computes the tensor from constants, at the line that created it, and
every later graph reads it as an input. Expected once, like optimizer buffers made on the first
step.

Evidence: where B reads the new input, the instruction matched to that reader in A reads (at the
same operand) a value of the same shape made of constants only, at a user's line that creates a
tensor and is not the reader's own line (a Python scalar baked into the graph is made where it
is used: that is `special_scalar`'s, not this).
"""

from __future__ import annotations

import re
from dataclasses import replace

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._causes import added_at_warm_up, added_part, merge
from xlagraph.diagnose.recognizers._dataflow import downstream, rewired, upstream
from xlagraph.diagnose.recognizers._source import source_text
from xlagraph.diagnose.shapes import shape_of
from xlagraph.match.users import users_of
from xlagraph.opcodes import COMMUTATIVE, RANDOM

__all__ = ["RECOGNIZER"]

_LEAVES = RANDOM | {"constant", "iota"}
# A line that creates a tensor with values of its own (not one computed from other tensors).
_CREATES = re.compile(
    r"\b(?:torch\.)?(?:zeros|ones|full|empty|tensor|zeros_like|ones_like|full_like|empty_like|arange|eye"
    r"|rand|randn|randint|randperm|rand_like|randn_like|normal|linspace|logspace)\s*\("
    r"|\.new_(?:zeros|ones|full|empty|tensor)\s*\("
)


def _constants_only(comp: CanonicalComputation, name: str) -> bool:
    """`name` is computed from constants, iotas and random numbers alone: no tensor the step
    reads reaches it (scalars may: the RNG seed torch_xla passes, a Python number as data)."""
    stack, seen = [name], {name}
    while stack:
        n = stack.pop()
        ins = comp.instruction(n)
        if ins.opcode == "parameter":
            if not _scalar(comp, n):
                return False
            continue
        if ins.opcode in _LEAVES:
            continue
        for o in comp.operands.get(n, ()):
            if o not in seen:
                seen.add(o)
                stack.append(o)
    return True


def _scalar(comp: CanonicalComputation, name: str) -> bool:
    return shape_of(comp, name).split("{")[0].endswith("[]")


def _created_at(evidence: Evidence, p: str, users: dict[str, list[str]]) -> str:
    """The line that created the tensor B reads as input `p`, where A computed it from
    constants; "" when A read something else there."""
    left, right, match = evidence.left.entry, evidence.right.entry, evidence.entry_match
    shape = shape_of(right, p)
    for u in users.get(p, ()):
        v = match.get(u)
        if v is None or v not in left.operands:
            continue
        ops_u, ops_v = right.operands[u], left.operands[v]
        at = [k for k, o in enumerate(ops_u) if o == p]
        if right.instruction(u).opcode in COMMUTATIVE:
            at = list(range(len(ops_v)))
        for k in at:
            x = ops_v[k] if k < len(ops_v) else ""
            if not x or shape_of(left, x) != shape or not _constants_only(left, x):
                continue
            loc = left.instruction(x).location
            if (
                loc
                and loc != left.instruction(v).location
                and is_user_location(loc)
                and _CREATES.search(source_text(loc).split("#", 1)[0])
            ):
                return loc
    return ""


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    added = added_at_warm_up(evidence, pending)
    if not added:
        return NOTHING
    right = evidence.right.entry
    users = users_of(right)
    made = {p: loc for i in added for p in pending[i].right if (loc := _created_at(evidence, p, users))}
    if not made:
        return NOTHING
    # What reads them in B, and what A computed in their place (the constants, their readers).
    readers = downstream(users, made)
    left = evidence.left.entry
    in_a = {evidence.entry_match[u] for u in readers if u in evidence.entry_match}
    in_a |= {o for v in in_a for o in left.operands.get(v, ()) if _constants_only(left, o)}
    regions = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.STRUCTURE
        and (set(c.right) & readers or set(c.left) & in_a or rewired(evidence, c))
        and all(n in readers or n in evidence.entry_match for n in c.right)
    ]
    # The first graph also returned them (a live tensor pending at the sync is one of its
    # results); B reads them instead: those outputs went with the warm-up, nothing was dropped.
    lines_made = set(made.values())
    regions += [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.OUTPUT_REMOVED
        and c.left
        and all(_constants_only(left, n) and left.instruction(n).location in lines_made for n in c.left)
    ]
    # Pieces of that computation the matcher left unpaired in A alone (one reshape of a
    # `torch.zeros(n)`'s expand, where the updates reading the tensors are paired in another order).
    regions += [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.STRUCTURE
        and i not in regions
        and c.left
        and not c.right
        and all(_constants_only(left, n) and left.instruction(n).location in lines_made for n in c.left)
    ]
    # The scalars only that computation read (the RNG seed of a `torch.randn(..., device=...)`)
    # are gone from B with it.
    made_a = [
        n for n in left.operands if left.instruction(n).location in lines_made and _constants_only(left, n)
    ]
    behind = upstream(left.operands, made_a) | set(made_a)
    users_a = users_of(left)
    regions += [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.PARAMETER_REMOVED
        and c.left
        and all(_scalar(left, n) and set(users_a.get(n, ())) <= behind for n in c.left)
    ]
    kept = [added_part(pending[i], lambda p: p in made) for i in added]
    rest = tuple(c for i in added if (c := added_part(pending[i], lambda p: p not in made)) is not None)
    shapes = sorted({shape_of(right, p) for p in made})
    lines = sorted(set(made.values()))
    summary = (
        f"tensors created before the loop: B takes {len(made)} input(s) ({', '.join(shapes[:4])}) that "
        f"the first graph computed from constants (made at {', '.join(lines[:3])}): a device tensor "
        "created before the first sync is computed by it and read as data from then on; expected once"
    )
    cause = merge(
        CauseKind.STATE_INIT, summary, [c for c in kept if c] + [pending[i] for i in regions], info=True
    )
    cause = replace(cause, sources=tuple(dict.fromkeys([*lines, *cause.sources]))[:6])
    return Recognized((cause,), frozenset(added + regions), rest)


RECOGNIZER = Recognizer("materialized", _recognize)
