"""Canonical form of a module: what stays when everything that does not change the graph goes.

Rules, applied per computation by the compiled core (rust/src/canon/; written plainly, one
walk per rule, in tests/canonical_reference.py, the oracle the tests hold the core to):

1. tuple / get-tuple-element forwarding: `get-tuple-element(tuple(a, b), index=1)` is `b`, and
   elements of a tuple-shaped entry parameter read through `get-tuple-element` (chains of them for
   nested tuples) are the inputs, the tuple plumbing (PyTorch/XLA wraps parameters in a tuple past
   3,200 of them); a tuple read whole stays one input (rust/src/canon/tuple_params.rs);
2. dead code: instructions that cannot reach the outputs are set aside and reported, not compared;
3. structural hashes (rust/src/canon/structural_hashes.rs): a Merkle hash per instruction over
   opcode, shape without layout, attributes that change semantics (names, numbering, metadata,
   channel ids, frontend attributes and backend config are left out; called computations are
   replaced by their own hash), the printed value of a constant (however large; an elided `{...}`
   compares by shape) and operand hashes in order (commutative ops too: torch_xla's graph hash
   keeps operand order). `h0` hashes every parameter by shape alone, so it does not depend on
   parameter numbering; in the ENTRY, outputs are then ordered by `h0`, parameters numbered by
   first use in a depth-first walk from those outputs, and `h1` adds that canonical number, so it
   tells `p0 - p1` from `p0 - p0` while staying blind to how the dump numbered them.
   A called computation (fusion, call, reduce, sort comparator, while body, branch) keeps the
   dump's parameter numbers and output order: its callers pass operands by position and read
   results by tuple index, so a swapped comparator or a reordered `tuple` is a different graph;
4. layouts (minor-to-major, tiling, memory space) are not in `h0`/`h1`, so matching pairs
   instructions whatever their layout, but non-default ones enter each computation's hash
   (and its `layouts`); the diagnosis compares the layouts of paired inputs and outputs.

The module fingerprint hashes the entry's outputs in canonical order, how they nest, and the shapes
of unused parameters, so it does not change under renumbering, instruction or constant reordering,
tuple plumbing, metadata, printing options, or permutation of the entry's parameters and outputs.
An operand cycle raises `ParseError` (every walk is iterative).

A module read by the compiled HLO reader arrives canonicalized (`_core.parse_hlo` applies these
rules on its own records, rust/src/canon/); any other module (lazy IR, a proto, IR built by hand)
is read into the core's records by `_core.canonicalize_ir` (rust/src/py/from_python.rs) and
canonicalized there (`engine.py`). Hashes are CPython's hashes of ints and tuples and BLAKE2b
content keys: the same in every process.
"""

from xlagraph.canonical.engine import canonicalize
from xlagraph.canonical.model import CanonicalComputation, CanonicalModule

__all__ = [
    "CanonicalComputation",
    "CanonicalModule",
    "canonicalize",
]
