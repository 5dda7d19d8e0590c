"""`chlo` operations. XLA's export writes `chlo.erf` as HLO's `erf` and `chlo.top_k` as `topk`
(`largest=true`: chlo's top_k is always of the largest); the other elementwise ones it expands
into many instructions (`chlo.erf_inv` of `jax.random.normal`, `chlo.erfc` of an exact `gelu`,
`chlo.lgamma`, `chlo.asinh`, ...), a polynomial approximation chosen by XLA's version and the
element type. This reader writes each of those as one `custom-call` whose target names the
operation (`custom_call_target="chlo.erf_inv"`): an elementwise chlo operation is a function of
its operands and result type alone, so two modules compare `identical` exactly when the
operation, its operands and its type are the same, and a change of operation is never missed (its
attributes, which none of these has, would be carried as the others' are). Such a module differs
from XLA's HLO of the same program in those places (compare StableHLO with StableHLO). The chlo
operations with attributes of their own (`broadcast_*`, `constant_like`, `ragged_dot`, ...) are
refused by name.
"""

from __future__ import annotations

from tests.stablehlo_reference.attributes import Parsed, ints, one
from tests.stablehlo_reference.emit import Comp, Emitter, TranslateError, Value
from tests.stablehlo_reference.structure import Op

__all__ = ["CHLO_HANDLERS", "CHLO_OPAQUE"]

# Elementwise chlo operations without attributes that XLA's export expands (chlo_ops.td).
CHLO_OPAQUE = frozenset(
    {"acos", "acosh", "asin", "asinh", "atan", "atanh", "bessel_i1e", "conj", "cosh", "sinh", "tan",
     "digamma", "erf_inv", "erfc", "is_inf", "is_neg_inf", "is_pos_inf", "lgamma", "square",
     "next_after", "polygamma", "zeta"}
)  # fmt: skip


def _erf(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    return one(em, comp, op, p, "erf", [])


def _top_k(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    if len(p.outs) != 2 or "k" not in p.attrs:
        raise TranslateError("chlo.top_k: expected `k` and two results (values, indices)", op.line)
    return one(em, comp, op, p, "topk", [f"k={ints(p.attrs['k'])[0]}", "largest=true"])


def _opaque(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    return one(em, comp, op, p, "custom-call", [f'custom_call_target="{op.name}"'])


CHLO_HANDLERS = {"erf": _erf, "top_k": _top_k} | dict.fromkeys(CHLO_OPAQUE, _opaque)
