"""`collective`: a collective's results scaled in one graph only. torch_xla's `xm.all_reduce(...,
scale=s)` (and the gradient averaging of `xm.reduce_gradients` / `xm.optimizer_step`) multiplies
each reduced tensor by `s` only when `s != 1.0`: averaging over 2 replicas traces a multiply by 0.5
after every gradient all-reduce, summing traces none. Neuron's and other backends' data-parallel
wrappers do the same. Without this the two graphs differ by a block of multiplies at no user line,
'a pattern xlagraph does not know'.

Evidence: the work one graph alone does is multiplies (or divides) of a collective's results by a
constant (broadcast or not), and the other graph reads those results directly.
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.collectives import is_collective
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._causes import merge

__all__ = ["RECOGNIZER"]

_SCALE = frozenset({"multiply", "divide"})
_FACTOR = frozenset({"broadcast", "constant", "convert", "reshape"})
HINT = fix("collective.scale")


def _from_collective(comp: CanonicalComputation, name: str) -> bool:
    """`name` is a collective, or an element of one's tuple result."""
    ins = comp.instruction(name)
    if ins.opcode == "get-tuple-element":
        ops = comp.operands.get(name, ())
        return bool(ops) and is_collective(comp.instruction(ops[0]).opcode)
    return is_collective(ins.opcode)


def _factor(comp: CanonicalComputation, name: str) -> str:
    """The literal a factor is built from (`0.5` through broadcasts and converts), or ""."""
    for _ in range(4):
        ins = comp.instruction(name)
        if ins.opcode == "constant":
            return ins.payload
        if ins.opcode not in _FACTOR:
            return ""
        ops = comp.operands.get(name, ())
        if len(ops) != 1:
            return ""
        name = ops[0]
    return ""


def _scales(comp: CanonicalComputation, names: tuple[str, ...]) -> list[str] | None:
    """The factors of the scaling ops among `names` when every op there is a scale of a
    collective's result, part of its factor, or the result itself; None otherwise."""
    factors: list[str] = []
    for name in names:
        ins = comp.instruction(name)
        if ins.opcode in _FACTOR or _from_collective(comp, name):
            continue
        ops = comp.operands.get(name, ())
        if ins.opcode not in _SCALE or len(ops) != 2 or not _from_collective(comp, ops[0]):
            return None
        factor = _factor(comp, ops[1])
        if not factor:
            return None
        factors.append(factor)
    return factors


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    for i, cause in enumerate(pending):
        if cause.kind is not CauseKind.STRUCTURE or not cause.left or not cause.right:
            continue
        left, right = evidence.left.entry, evidence.right.entry
        if not all(n in left.computation.by_name for n in cause.left) or not all(
            n in right.computation.by_name for n in cause.right
        ):
            continue  # a region of a called computation
        fl, fr = _scales(left, cause.left), _scales(right, cause.right)
        if fl is None or fr is None or bool(fl) == bool(fr):
            continue
        side, factors = ("A", fl) if fl else ("B", fr)
        shown = ", ".join(sorted(set(factors))[:3])
        summary = (
            f"{len(factors)} result(s) of collectives are scaled (by {shown}) in {side} only, read "
            "unscaled in the other graph: averaging over replicas on in one graph, off (a scale of 1.0 "
            "is not traced) in the other"
        )
        return Recognized((merge(CauseKind.COLLECTIVE, summary, [cause], hint=HINT),), frozenset({i}))
    return NOTHING


RECOGNIZER = Recognizer("collective_scale", _recognize)
