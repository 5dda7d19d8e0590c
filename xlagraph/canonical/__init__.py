"""Canonical form of a module: what stays when everything that does not change the graph goes.

The rules (tuple forwarding, dead code set aside, structural hashes `h0`/`h1`, the entry's
canonical parameter and output order, layouts kept out of `h0`/`h1`) and why each is what it is
are in docs/development.md ("The IR is immutable"); the compiled core applies them per
computation (rust/src/canon/), and tests/canonical_reference.py writes them plainly, one walk
per rule, as the oracle the tests hold the core to.

The module fingerprint hashes the entry's outputs in canonical order, how they nest, and the shapes
of unused parameters, so it does not change under renumbering, instruction or constant reordering,
tuple plumbing, metadata, printing options, or permutation of the entry's parameters and outputs.
An operand cycle raises `ParseError` (every walk is iterative).

A module read by the compiled HLO reader arrives canonicalized (`_core.parse_hlo`); any other
(lazy IR, a proto, IR built by hand) is read into the core's records by `_core.canonicalize_ir`
(rust/src/py/from_python.rs) and canonicalized there (`engine.py`). Hashes are CPython's hashes of
ints and tuples and BLAKE2b content keys: the same in every process.
"""

from xlagraph.canonical.engine import canonicalize
from xlagraph.canonical.model import CanonicalComputation, CanonicalModule

__all__ = [
    "CanonicalComputation",
    "CanonicalModule",
    "canonicalize",
]
