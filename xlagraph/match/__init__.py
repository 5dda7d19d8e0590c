"""Structural matching of two canonical computations, in the phases of OpenXLA's hlo_diff.

Each phase claims only pairs that are still free, and records its name on the pair:

1. `outputs-exact`: outputs with equal structural hash (`h1`), with their whole subgraphs;
2. `outputs`: the remaining outputs, in order, among those of equal opcode and shape;
3. `top-down`: from paired instructions, operands at the same position with the same opcode
   (subgraphs with equal hashes are paired whole);
4. `exact` / `exact-shape`: identical subgraphs anywhere, for hashes seen once on each side;
5. `bottom-up`: instructions whose operands are paired, among users of the counterparts;
6. `parameters`: the remaining ones by shape, then by number;
7. `top-down-lenient`: an opcode changed in place.
"""

from __future__ import annotations

from collections.abc import Callable

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import strip_layout
from xlagraph.match.bottom_up import match_bottom_up
from xlagraph.match.exact import match_exact, zip_subgraphs
from xlagraph.match.mappings import Mappings, Matching
from xlagraph.match.top_down import match_top_down

__all__ = ["Matching", "match"]


def match(left: CanonicalComputation, right: CanonicalComputation) -> Matching:
    """Pair the instructions of `left` and `right` (both canonical)."""
    m = Mappings()
    phases: tuple[tuple[Phase, tuple[object, ...]], ...] = (
        (_match_outputs_exact, ()),
        (_match_outputs, ()),
        (match_top_down, (True,)),
        (match_exact, ("h1",)),
        (match_exact, ("h0",)),
        (match_top_down, (True,)),
        (match_bottom_up, ()),
        (_match_parameters, ()),
        (match_top_down, (True,)),
        (match_bottom_up, ()),
        (match_top_down, (False,)),
    )
    for phase, args in phases:
        if _complete(left, m.left) or _complete(right, m.right):
            break  # every phase pairs a free instruction of each side: none can add anything
        phase(left, right, m, *args)
    return m.freeze()


Phase = Callable[..., None]


def _complete(comp: CanonicalComputation, paired: dict[str, str]) -> bool:
    """Every instruction a phase could pair (live ones, parameters) is paired already."""
    if len(paired) < len(comp.order):  # cheap test first: the usual answer while matching
        return False
    return all(map(paired.__contains__, comp.order)) and all(map(paired.__contains__, comp.param_number))


def _shape(comp: CanonicalComputation, name: str) -> str:
    return strip_layout(comp.instruction(name).shape)


def _match_outputs_exact(left: CanonicalComputation, right: CanonicalComputation, m: Mappings) -> None:
    pool: dict[int, list[str]] = {}
    for b in right.outputs:
        pool.setdefault(right.h1[b], []).append(b)
    for a in left.outputs:
        candidates = pool.get(left.h1[a])
        while candidates and candidates[0] in m.right:
            candidates.pop(0)
        if candidates and a not in m.left:
            b = candidates.pop(0)
            m.add(a, b, "outputs-exact")
            zip_subgraphs(left, right, a, b, "h1", m, "outputs-exact")


def _match_outputs(left: CanonicalComputation, right: CanonicalComputation, m: Mappings) -> None:
    """Outputs are live tensors in creation order: pair them in order, first by opcode and shape,
    then by shape alone (a momentum buffer is `grad` on the first step, `buf * m + grad` after)."""
    for same_opcode in (True, False):
        free_right = [o for o in right.outputs if o not in m.right]
        # Shapes and opcodes once per pass, not once per comparison: an output that nothing
        # matches is compared with every later one.
        right_keys = [(_shape(right, b), right.instruction(b).opcode) for b in free_right]
        start = 0
        for a in left.outputs:
            if a in m.left:
                continue
            shape, opcode = _shape(left, a), left.instruction(a).opcode
            for k in range(start, len(free_right)):
                b = free_right[k]
                shape_b, opcode_b = right_keys[k]
                if b in m.right or shape != shape_b:
                    continue
                if same_opcode and opcode != opcode_b:
                    continue
                m.add(a, b, "outputs")
                start = k + 1
                break


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
