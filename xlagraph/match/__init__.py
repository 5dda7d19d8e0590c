"""Structural matching of two canonical computations, in the phases of OpenXLA's hlo_diff.

Each phase claims only pairs that are still free, and records its name on the pair:

1. `outputs-exact`: outputs with equal structural hash (`h1`), with their whole subgraphs;
   `outputs-context`: outputs whose data-flow context agrees (`correspondence`), where a changed
   constant or size broke `h1`;
2. `outputs`: the remaining outputs in order, among equal opcode and shape; when both sides
   keep as many tensors, output `i` with output `i` first where only the element type differs,
   or the shape is a shard of the other's and the collectives differ (tensor parallelism halves
   a weight and its update). Shapes one side has more of wait
   for step 6 (in order, the first would pair with the first wherever the extra ones were
   inserted: a pipeline block put in front shifts every later weight update), and so does a
   value sent to another pipeline stage: a stage's split moves at its send / recv end, and
   matching from there pairs the blocks off by the ones moved;
3. `top-down`: from paired instructions, operands at the same position with the same opcode
   (subgraphs with equal hashes are paired whole);
4. `exact` / `exact-shape`: identical subgraphs anywhere, for hashes seen once on each side;
5. `bottom-up`: instructions whose operands are paired, among users of the counterparts;
6. `outputs` again, every shape, in order, then `top-down` and `bottom-up` from them;
   `parameters`: the remaining ones by shape, then by number;
7. `top-down-lenient`: an opcode changed in place.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from itertools import compress
from operator import attrgetter
from weakref import WeakKeyDictionary

from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import Instruction, strip_layout
from xlagraph.match.bottom_up import match_bottom_up
from xlagraph.match.correspondence import correspond
from xlagraph.match.exact import match_exact, zip_subgraphs
from xlagraph.match.mappings import Mappings, Matching
from xlagraph.match.shapes import dims, sharded_alike
from xlagraph.match.top_down import match_top_down
from xlagraph.opcodes import COLLECTIVES

try:
    from xlagraph.match import _compiled
except ImportError:  # a compiled core without the matcher: the reference answers
    _compiled = None  # type: ignore[assignment]

__all__ = ["Matching", "match", "match_python"]


def match(left: CanonicalComputation, right: CanonicalComputation) -> Matching:
    """Pair the instructions of `left` and `right` (both canonical).

    The compiled matcher (`_compiled.py`) answers, pair for pair and in the same order, what
    `match_python` does; `XLAGRAPH_MATCHER=python` selects the reference (the equivalence test
    runs both)."""
    if _compiled is not None and os.environ.get("XLAGRAPH_MATCHER") != "python":
        sent = _sent(left) | _sent(right)
        context = _context_pairs(left, right)
        found = _compiled.match(left, right, sent, _layout(left) != _layout(right), context)
        if found is not None:
            return found
    return match_python(left, right)


def match_python(left: CanonicalComputation, right: CanonicalComputation) -> Matching:
    """The reference matcher: the phases of the module's docstring, in Python."""
    m = Mappings()
    sent = _sent(left) | _sent(right)
    # Other dimensions make a shard only where the graphs run split another way.
    resharded = _layout(left) != _layout(right)
    phases: tuple[tuple[Phase, tuple[object, ...]], ...] = (
        (_match_outputs_exact, ()),
        (_match_outputs_context, ()),
        (_match_outputs, (sent, resharded)),
        (match_top_down, (True,)),
        (match_exact, ("h1",)),
        (match_exact, ("h0",)),
        (match_top_down, (True,)),
        (match_bottom_up, ()),
        (_match_outputs, (frozenset(), resharded, False)),
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


def _match_outputs_context(left: CanonicalComputation, right: CanonicalComputation, m: Mappings) -> None:
    """Outputs whose whole data-flow context agrees (`correspondence`): a constant or a size
    that changed breaks `h1`, not this; pairs only the same opcode and rank."""
    for i, j in _context_pairs(left, right):
        m.add(left.outputs[i], right.outputs[j], "outputs-context")  # where both are still free


def _context_pairs(left: CanonicalComputation, right: CanonicalComputation) -> list[tuple[int, int]]:
    """The output slots `outputs-context` pairs where both are free, in its order: untied
    context pairs of the same opcode and rank (the compiled matcher gets them as they are)."""
    if not (left.computation.is_entry and right.computation.is_entry):
        return []  # the graph's interface is the entry's; called computations pair as before
    corr = correspond(left, right)
    found = []
    for i, j in corr.outputs.items():
        if i in corr.tied:
            continue
        a, b = left.outputs[i], right.outputs[j]
        ia, ib = left.instruction(a), right.instruction(b)
        if ia.opcode == ib.opcode and _rank(_shape(left, a)) == _rank(_shape(right, b)):
            found.append((i, j))
    return found


def _rank(shape: str) -> int:
    return -1 if shape.startswith("(") else shape.count(",") + (0 if "[]" in shape else 1)


def _sent(comp: CanonicalComputation) -> frozenset[str]:
    """Values handed to `send` (another pipeline stage's input). Read from the computation as
    written: forwarding through the send's tuple leaves the send itself out of `order`. Kept per
    computation, like `_layout`: a report matches each graph with several."""
    found = _SENT.get(comp)
    if found is None:
        found = _SENT[comp] = frozenset(i.operands[0] for i in _with_opcodes(comp, _SEND) if i.operands)
    return found


_SENT: WeakKeyDictionary[CanonicalComputation, frozenset[str]] = WeakKeyDictionary()
_LAYOUT: WeakKeyDictionary[CanonicalComputation, list[tuple[str, str]]] = WeakKeyDictionary()


def _with_opcodes(comp: CanonicalComputation, opcodes: frozenset[str]) -> Iterator[Instruction]:
    """The computation's instructions of those opcodes, picked by the core's handle or at C
    speed (most have none)."""
    instructions = comp.computation.instructions
    if comp.core is not None:
        return map(instructions.__getitem__, comp.core.with_opcodes(opcodes))
    return compress(instructions, map(opcodes.__contains__, map(_OPCODE, instructions)))


_OPCODE = attrgetter("opcode")
_SEND = frozenset({"send"})


def _layout(comp: CanonicalComputation) -> list[tuple[str, str]]:
    """The collectives a computation runs and over which groups: another layout means another
    parallel split, where a weight's shard shape changes. Never modify the list."""
    found = _LAYOUT.get(comp)
    if found is None:
        found = _LAYOUT[comp] = sorted(
            (i.opcode, i.attribute("replica_groups") or "") for i in _with_opcodes(comp, COLLECTIVES)
        )
    return found


def _match_outputs(
    left: CanonicalComputation,
    right: CanonicalComputation,
    m: Mappings,
    sent: AbstractSet[str],
    resharded: bool,
    balanced_only: bool = True,
) -> None:
    """Outputs are live tensors in creation order: pair them in order, first by opcode and shape,
    then by shape alone (a momentum buffer is `grad` on the first step, `buf * m + grad` after).

    When both sides keep as many tensors, output `i` is first tried with output `i` in another
    element type, or in another shard shape where the graphs' collectives differ (tensor
    parallelism halves a weight and its update); equal shapes pair in order as before. With
    `balanced_only`, a shape that one side has more of is left to the dataflow, and so is a value
    `sent` to another pipeline stage (see the module's docstring). Pairs are made in output order:
    top-down expands the last made first, and the order decides between look-alike branches."""
    slots = {b: k for k, b in enumerate(right.outputs)} if len(left.outputs) == len(right.outputs) else {}
    for same_opcode in (True, False):
        free_right = [o for o in right.outputs if o not in m.right]
        free_left = [o for o in left.outputs if o not in m.left]
        # Shapes and opcodes once per pass, not once per comparison: an output that nothing
        # matches is compared with every later one.
        right_keys = [(_shape(right, b), right.instruction(b).opcode) for b in free_right]
        left_keys = [(_shape(left, a), left.instruction(a).opcode) for a in free_left]
        at = {b: k for k, b in enumerate(free_right)}
        skip: set[str] = set()
        if balanced_only:
            count_r = Counter(s for s, _ in right_keys)
            count_l = Counter(s for s, _ in left_keys)
            skip = {s for s in count_l.keys() | count_r.keys() if count_l[s] != count_r[s]}
        start = 0
        position = {a: i for i, a in enumerate(left.outputs)} if slots else {}
        for a, (shape, opcode) in zip(free_left, left_keys, strict=True):
            if a in m.left or a in sent:
                continue
            if slots:
                b = right.outputs[position[a]]
                k = at.get(b)
                if k is not None and b not in m.right and b not in sent:
                    shape_b, opcode_b = right_keys[k]
                    if (
                        opcode == opcode_b
                        and shape != shape_b
                        and sharded_alike(shape, shape_b)
                        and (resharded or dims(shape) == dims(shape_b))
                    ):
                        m.add(a, b, "outputs")
                        start = max(start, k + 1)
                        continue
            if shape in skip:
                continue
            for k in range(start, len(free_right)):
                b = free_right[k]
                shape_b, opcode_b = right_keys[k]
                if b in m.right or shape != shape_b or b in sent:
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
