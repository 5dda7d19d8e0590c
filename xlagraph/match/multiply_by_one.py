"""Multiplies by one, seen through by the correspondence.

torch_xla lowers `a + b` (and `a - b`) as `a + b * alpha`, alpha a constant 1, on the second
operand only: a sum of two terms written in the other order moves that multiply from one term to
the other, and each term's data-flow context changes although `x * 1` is `x`. The pairing of
inputs and outputs reads a multiply by an exact scalar one as the value it multiplies, so the
terms keep the context of an operand of the commutative `add`. The instructions stay as they are
everywhere else (hashes, the matching, what is printed)."""

from __future__ import annotations

from dataclasses import dataclass

from xlagraph import _core
from xlagraph._kept import kept_while_alive
from xlagraph.canonical import CanonicalComputation
from xlagraph.ir import name_at

__all__ = ["Identities", "identity_multiplies"]


@dataclass(frozen=True)
class Identities:
    """`by_name`: each identity multiply -> the value it multiplies (names); `by_index`: the same
    as positions in `Computation.instructions` (what the core's handle indexes)."""

    by_name: dict[str, str]
    by_index: tuple[tuple[int, int], ...]


_NONE = Identities({}, ())


@kept_while_alive
def identity_multiplies(comp: CanonicalComputation) -> Identities:
    """Each live `multiply(x, one)` (either operand the one: a scalar constant 1 or a broadcast
    of one) -> x, followed through chains (`x * 1 * 1`). A multiply that is itself an output
    stays: its slot keeps a node of its own. Kept while `comp` lives (a report's graphs take part
    in several diffs; canonical forms are never modified): never modify the answer.
    The ones as the reader picked them (rust/src/canon/handle.rs `ONE`), the rest in one pass
    on the core's handle (rust/src/matching/multiply_by_one.rs): what the rule written in Python
    (tests/oracles/multiply_by_one_reference.py) finds."""
    at = comp.core.scalar_ones()  # type: ignore[union-attr]
    pairs = _core.identity_multiplies_of(comp.core, at) if at else []
    if not pairs:
        return _NONE
    name = name_at(comp.computation.instructions)
    return Identities({name(a): name(b) for a, b in pairs}, tuple(pairs))
