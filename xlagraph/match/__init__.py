"""Structural matching of two canonical computations, in the phases of OpenXLA's hlo_diff.

Each phase claims only pairs that are still free, and records its name on the pair:

1. `exact`: identical subgraphs (equal `h1`), largest first;
2. `exact-shape`: identical up to parameter identity (equal `h0`), unambiguous ones only;
3. outputs: the remaining outputs, paired in order among those of equal shape;
4. `top-down` (strict, equal opcodes), then `bottom-up` (operands already paired), then
   `top-down-lenient` (an opcode changed in place);
5. parameters: the remaining ones by shape, then by number.
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout
from xlagraph.match.bottom_up import match_bottom_up
from xlagraph.match.exact import match_exact
from xlagraph.match.mappings import Mappings, Matching
from xlagraph.match.top_down import match_top_down

__all__ = ["Matching", "match"]


def match(left: CanonicalComputation, right: CanonicalComputation) -> Matching:
    """Pair the instructions of `left` and `right` (both canonical)."""
    m = Mappings()
    match_exact(left, right, m, "h1")
    match_exact(left, right, m, "h0")
    _match_outputs(left, right, m)
    match_top_down(left, right, m, strict=True)
    match_bottom_up(left, right, m)
    _match_parameters(left, right, m)
    match_top_down(left, right, m, strict=True)
    match_bottom_up(left, right, m)
    match_top_down(left, right, m, strict=False)
    return m.freeze()


def _shape(comp: CanonicalComputation, name: str) -> str:
    return strip_layout(comp.instruction(name).shape)


def _match_outputs(left: CanonicalComputation, right: CanonicalComputation, m: Mappings) -> None:
    free_right = [o for o in right.outputs if o not in m.right]
    for a in left.outputs:
        if a in m.left:
            continue
        ia = left.instruction(a)
        for b in free_right:
            ib = right.instruction(b)
            if b not in m.right and ia.opcode == ib.opcode and _shape(left, a) == _shape(right, b):
                m.add(a, b, "outputs")
                break


def _match_parameters(left: CanonicalComputation, right: CanonicalComputation, m: Mappings) -> None:
    free_left = sorted((p for p in left.param_number if p not in m.left), key=left.param_number.__getitem__)
    free_right = sorted((p for p in right.param_number if p not in m.right), key=right.param_number.__getitem__)
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
