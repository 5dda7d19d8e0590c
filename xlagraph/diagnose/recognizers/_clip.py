"""What a global-norm gradient clip looks like in a graph, in HLO and in torch_xla's lazy IR:
`conditional_work` asks when clipping runs on some steps only."""

from __future__ import annotations

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.evidence import Evidence
from xlagraph.ir import Instruction, strip_layout
from xlagraph.opcodes import RESTATES

__all__ = ["CLIP_OPS", "CLIP_WORK", "clip_ops", "runs_clip", "scalar_clip"]

CLIP_OPS = frozenset({"sqrt", "clamp", "minimum"})
CLIP_WORK = 20  # instructions of outputs that carry a clip of their own


def clip_ops(ops: set[str]) -> bool:
    """A global-norm clip, whoever wrote it (torch, torch_xla, neuronx-distributed or the user's
    own tensor-parallel version): a square root of summed squares (`sqrt`, or `power` by 0.5 as
    torch.norm lowers it) and a clamped coefficient."""
    ops = {_LAZY.get(op, op) for op in ops}  # lazy IR names its ops aten::sqrt, aten::where, ...
    return bool(ops & {"sqrt", "power"}) and bool(ops & {"clamp", "minimum"})


def scalar_clip(evidence: Evidence, cause: Cause) -> bool:
    """A global norm and its capped coefficient are scalars: `sqrt` of a summed square and a clamp
    (or a select) of one value, which the elementwise square roots of Adam are not; and the
    coefficient scales the gradients. A meter of gradient norms (a guarded mean, a square root,
    the norms returned) has the first two and scales nothing: an output of its own, not a clip."""
    named = list(evidence.instructions(cause))
    return _a_clip(named) and _scales(named)


def runs_clip(canon: CanonicalModule) -> bool:
    """The graph's entry computes a global-norm clip of its own (a clip on every step: fewer
    gradients clipped when a module is skipped changes the clip's size, not whether it runs)."""
    return _a_clip([(canon, ins) for ins in canon.entry.computation.instructions])


def _a_clip(named: list[tuple[CanonicalModule, Instruction]]) -> bool:
    found = [(canon, ins) for canon, ins in named if strip_layout(ins.shape).endswith("[]")]
    scalar = {_LAZY.get(ins.opcode, ins.opcode) for _, ins in found}
    if not scalar & {"clamp", "minimum", "select"}:
        return False
    return any(
        _LAZY.get(ins.opcode, ins.opcode) in ("sqrt", "power") and _of_a_sum(canon, ins.name)
        for canon, ins in found
    )


def _scales(named: list[tuple[CanonicalModule, Instruction]]) -> bool:
    """A scalar clamp, minimum or select (the capped coefficient) is read by a multiply or a
    divide of a tensor, through broadcasts, converts and reshapes: the gradients it scales."""
    capped = {
        ins.name
        for _, ins in named
        if _LAZY.get(ins.opcode, ins.opcode) in ("clamp", "minimum", "select")
        and strip_layout(ins.shape).endswith("[]")
    }
    for canon, ins in named:
        if _LAZY.get(ins.opcode, ins.opcode) not in ("multiply", "divide") or strip_layout(
            ins.shape
        ).endswith("[]"):
            continue
        comp = next((c for c in canon.computations.values() if ins.name in c.computation.by_name), None)
        todo = list(comp.operands.get(ins.name, ())) if comp is not None else []
        for _ in range(_PASSED_THROUGH):
            if any(o in capped for o in todo):
                return True
            todo = [
                p
                for o in todo
                if _LAZY.get(comp.instruction(o).opcode, comp.instruction(o).opcode) in _PASSING  # type: ignore[union-attr]
                for p in comp.operands.get(o, ())  # type: ignore[union-attr]
            ]
    return False


# How many broadcasts, converts or reshapes lie between a clip's coefficient and the multiply
# that scales a gradient by it.
_PASSED_THROUGH = 4
_PASSING = RESTATES - {"transpose"}  # a coefficient is a scalar: nothing transposes it on the way


def _of_a_sum(canon: CanonicalModule, name: str) -> bool:
    """`name` reads, within a few ops, a reduction: the norm of summed squares, not sqrt(head_dim)."""
    comp = next((c for c in canon.computations.values() if name in c.computation.by_name), None)
    if comp is None:
        return False
    todo, seen = [name], set()
    for _ in range(6):
        todo = [o for n in todo for o in comp.operands.get(n, ()) if o not in seen]
        seen.update(todo)
        if any(comp.instruction(o).opcode in ("reduce", "aten::sum", "aten::norm") for o in todo):
            return True
    return False


# torch_xla's lazy IR op names for the ops of a clip, as HLO names them.
_LAZY = {
    "aten::sqrt": "sqrt",
    "aten::pow": "power",
    "aten::clamp": "clamp",
    "aten::clamp_max": "clamp",
    "aten::minimum": "minimum",
    "aten::where": "select",
    "aten::div": "divide",
    "aten::mul": "multiply",
    "aten::expand": "broadcast",
    "aten::view": "reshape",
    **{f"aten::{c}": "compare" for c in ("lt", "le", "gt", "ge", "eq", "ne")},
}
