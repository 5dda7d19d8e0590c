"""Regions that differ only by identity converts: a `convert` to the very type and shape its
operand already has computes nothing (XLA's simplifier removes it), so the values both graphs
compute are the same. PyTorch/XLA hashes the node, so it still changes the graph; like dead
code (`deadcode.py`) such a region is a cause only when nothing else differs, else a note.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout
from xlagraph.opcodes import COMMUTATIVE

if TYPE_CHECKING:
    from xlagraph.diagnose.comparison import Comparison

__all__ = ["identity_only", "noop_note"]


def _identity(comp: CanonicalComputation, name: str) -> bool:
    ins = comp.instruction(name)
    ops = comp.operands.get(name, ())
    return (
        ins.opcode == "convert"
        and len(ops) == 1
        and strip_layout(ins.shape) == strip_layout(comp.instruction(ops[0]).shape)
    )


def _through(comp: CanonicalComputation, name: str) -> str:
    for _ in range(16):
        if not _identity(comp, name):
            break
        name = comp.operands[name][0]
    return name


def identity_only(
    cmp: Comparison, lefts: list[str], rights: list[str], changed: list[tuple[str, str]]
) -> bool:
    """The region's unpaired instructions are all identity converts, and its changed pairs read,
    once those are seen through, operands the matching pairs: the same values either way."""
    left, right, pl = cmp.left, cmp.right, cmp.pair_left
    only = [(left, n) for n in lefts if n not in pl] + [(right, n) for n in rights if n not in cmp.pair_right]
    if not only or not all(_identity(c, n) for c, n in only):
        return False
    for a, b in changed:
        ia, ib = left.instruction(a), right.instruction(b)
        if ia.opcode != ib.opcode or strip_layout(ia.shape) != strip_layout(ib.shape):
            return False
        oa = [pl.get(_through(left, o)) for o in left.operands.get(a, ())]
        ob = [_through(right, o) for o in right.operands.get(b, ())]
        if None in oa or len(oa) != len(ob):
            return False
        if oa != ob and not (ia.opcode in COMMUTATIVE and sorted(oa) == sorted(ob)):  # type: ignore[type-var]
            return False
    return True


def noop_note(lefts: int, rights: int, shapes: list[str]) -> str:
    """What is said in place of such a region beside other differences."""
    shown = ", ".join(strip_layout(s) for s in shapes[:3])
    return (
        f"{lefts} identity convert(s) in A and {rights} in B ({shown}) convert a value to "
        "the type it already has: they compute nothing (XLA removes them); ignored beside the other "
        "differences"
    )
