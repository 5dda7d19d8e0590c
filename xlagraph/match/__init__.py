"""Structural matching of two canonical computations, in the phases of OpenXLA's hlo_diff.

The compiled core is the matcher (rust/src/matching/matcher.rs): it runs the phases in the order
`_core.match_phases()` gives, each claiming only pairs that are still free and recording its
name on the pair: outputs with equal structural hash, outputs whose data-flow context agrees,
outputs in order, top-down from paired instructions, identical subgraphs anywhere, bottom-up
from paired operands, then every output, the parameters, and a lenient top-down where an opcode
changed in place. `tests/oracles/match_reference.py` is the same matcher in Python, the
reference the core is tested against (read it for why each rule is what it is).

What the core needs from Python is computed here: the values sent to another pipeline stage
(`_sent`), whether the graphs run their collectives over other groups (`_layout`), and the
outputs paired by data-flow context (`_context_pairs`, from `correspondence`).
"""

from __future__ import annotations

from collections.abc import Iterator

from xlagraph._kept import kept_while_alive
from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import Instruction, strip_layout
from xlagraph.match import _compiled
from xlagraph.match._compiled import Matching
from xlagraph.match.correspondence import correspond
from xlagraph.opcodes import COLLECTIVES

__all__ = ["Matching", "match"]


def match(left: CanonicalComputation, right: CanonicalComputation) -> Matching:
    """Pair the instructions of `left` and `right` (both canonical), in the core."""
    sent = _sent(left) | _sent(right)
    # Other dimensions make a shard only where the graphs run split another way.
    resharded = _layout(left) != _layout(right)
    return _compiled.match(left, right, sent, resharded, _context_pairs(left, right))


def _shape(comp: CanonicalComputation, name: str) -> str:
    return strip_layout(comp.instruction(name).shape)


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


@kept_while_alive
def _sent(comp: CanonicalComputation) -> frozenset[str]:
    """Values handed to `send` (another pipeline stage's input). Read from the computation as
    written: forwarding through the send's tuple leaves the send itself out of `order`. Kept per
    computation, like `_layout`: a report matches each graph with several."""
    return frozenset(i.operands[0] for i in _with_opcodes(comp, _SEND) if i.operands)


def _with_opcodes(comp: CanonicalComputation, opcodes: frozenset[str]) -> Iterator[Instruction]:
    """The computation's instructions of those opcodes (most have none)."""
    return comp.with_opcodes(opcodes)


_SEND = frozenset({"send"})


@kept_while_alive
def _layout(comp: CanonicalComputation) -> list[tuple[str, str]]:
    """The collectives a computation runs and over which groups: another layout means another
    parallel split, where a weight's shard shape changes. Never modify the list."""
    return sorted((i.opcode, i.attribute("replica_groups") or "") for i in _with_opcodes(comp, COLLECTIVES))
