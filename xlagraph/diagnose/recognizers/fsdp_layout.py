"""FSDP sharded the parameters into another set of flat shards.

torch_xla's `XlaFullyShardedDataParallel` keeps each rank's share of the weights as 1-D shards,
one per wrapped module with `flatten_parameters` (one per parameter without), and reduce-scatters
each gradient shard. Another `auto_wrap_policy` or `flatten_parameters` gives other shard inputs,
other outputs and another number of reduce-scatters / all-gathers: one root reason, not a
bucketing change, new inputs and a Python int in `pad`.
"""

from __future__ import annotations

from dataclasses import replace

from xlagraph.diagnose.causes import INTERFACE, Cause, CauseKind
from xlagraph.diagnose.collectives import collectives
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.shapes import dim_sizes, shape_of

__all__ = ["RECOGNIZER"]

HINT = fix("collective.fsdp_wrapping")
_FSDP_COLLECTIVES = frozenset({"reduce-scatter", "all-gather"})
_INPUTS = (CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED, CauseKind.PARAMETER_SHAPE)
_INSIDE = (CauseKind.ATTRIBUTE, CauseKind.CONSTANT_VALUE, CauseKind.STRUCTURE, CauseKind.LAYOUT)
_FOLDED = (*INTERFACE, CauseKind.PARAMETER_SHAPE, *_INSIDE)


def _flat(shape: str) -> bool:
    dims = dim_sizes(shape)
    return shape.startswith(("f", "bf")) and dims is not None and len(dims) == 1


def _shards(evidence: Evidence, causes: list[Cause]) -> tuple[list[str], list[str]]:
    """(A's, B's) shapes of the inputs these causes add, drop or reshape; empty lists when any is
    not a flat floating-point shard."""
    left, right = evidence.left.entry, evidence.right.entry
    a = [shape_of(left, n) for c in causes for n in c.left if n in left.param_number]
    b = [shape_of(right, n) for c in causes for n in c.right if n in right.param_number]
    if not all(map(_flat, a + b)):
        return [], []
    return a, b


def _listed(shapes: list[str]) -> str:
    if not shapes:
        return "the same shards"
    return f"{len(shapes)} shard(s) " + fmt_list(list(dict.fromkeys(shapes)), 3)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    coll = [i for i, c in enumerate(pending) if c.kind is CauseKind.COLLECTIVE]
    inputs = [i for i, c in enumerate(pending) if c.kind in _INPUTS]
    if not coll or not inputs:
        return NOTHING
    kinds_a = {c.kind for c in collectives(evidence.left)}
    kinds_b = {c.kind for c in collectives(evidence.right)}
    if not (kinds_a & _FSDP_COLLECTIVES and kinds_b & _FSDP_COLLECTIVES):
        return NOTHING
    a, b = _shards(evidence, [pending[i] for i in inputs])
    if not (a or b):
        return NOTHING
    folded = [i for i, c in enumerate(pending) if c.kind in _FOLDED]
    n_a = sum(1 for c in collectives(evidence.left) if c.kind in _FSDP_COLLECTIVES)
    n_b = sum(1 for c in collectives(evidence.right) if c.kind in _FSDP_COLLECTIVES)
    summary = (
        f"FSDP sharded the weights into other flat shards (A: {_listed(a)}; B: {_listed(b)}), with "
        f"{n_a} vs {n_b} reduce-scatters / all-gathers; the inputs, outputs and padding that follow "
        "are folded in"
    )
    # Instructions inside are paired across different shards (a pad of one module's shard with
    # another's): their op-by-op changes would be invented, so only the instructions are kept.
    inside = [replace(pending[i], changes=()) if pending[i].kind in _INSIDE else pending[i] for i in folded]
    cause = merge(CauseKind.COLLECTIVE, summary, [pending[i] for i in coll] + inside, hint=HINT)
    return Recognized((cause,), frozenset(coll + folded))


RECOGNIZER = Recognizer("fsdp_layout", _recognize)
