"""A grown tensor cut to length: its slice is kept beside it, one cause with the growth.

`memory = torch.cat([memory, h])` then `memory = memory[:, -N:]` once it is longer than N: torch_xla's
slice is a view, so the step returns both the view and its base (the concatenation). Against a
step that did not cut, the base is the same output in another size (the `parameter_shape` cause of
the growing input) and the view looks like an output of its own. An added output that is only a
slice, reshape or transpose of another output computed from an input whose shape changed is that
change's view, folded into the `parameter_shape` cause; an added output computed otherwise stays a
cause of its own. So does one that A computes too (the matching pairs it with an A instruction):
the cut is new work of B's step, and a value both steps compute, only now returned, is a tensor
kept alive, whatever its size follows (issue 37: `jnp` slices returned beside a new batch size).
"""

from __future__ import annotations

from xlagraph.canonical.model import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import fold_into
from xlagraph.diagnose.recognizers._dataflow import downstream
from xlagraph.match.users import users_of
from xlagraph.opcodes import RESTATES

__all__ = ["RECOGNIZER"]

_VIEWS = RESTATES | {"slice"}


def _base(comp: CanonicalComputation, name: str) -> str | None:
    """The other output `name` is a view of (past slices, reshapes, transposes), or None."""
    outputs = set(comp.outputs)
    by_name = comp.computation.by_name
    for _ in range(16):
        ins = by_name.get(name)
        ops = comp.operands.get(name, ())
        if ins is None or ins.opcode not in _VIEWS or len(ops) != 1:
            return None
        name = ops[0]
        if name in outputs:
            return name
    return None


def _is_view(comp: CanonicalComputation, name: str) -> bool:
    ins = comp.computation.by_name.get(name)
    return ins is not None and ins.opcode in _VIEWS


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    right = evidence.right.entry
    # The added outputs that are views, and the outputs they are views of: asked first, as they
    # depend on no `parameter_shape` cause, so the cone (half a 99K graph under a batch size,
    # 0.03 CPU-s a walk) is walked only where some added output could fold into it.
    candidates = [
        (j, bases)
        for j, c in enumerate(pending)
        if c.kind is CauseKind.OUTPUT_ADDED
        and not c.left
        and (heads := [ch.right for ch in c.changes if ch.what == "output"])
        and None not in (bases := [_base(right, h) for h in heads])
        and all(_is_view(right, n) for n in c.right)
        and not any(h in evidence.entry_match for h in heads)
    ]
    if not candidates:
        return NOTHING
    for i, root in enumerate(pending):
        resized = [n for n in root.right if n in right.param_number]
        if root.kind is not CauseKind.PARAMETER_SHAPE or not resized:
            continue
        cone = downstream(users_of(right), resized)
        views = [j for j, bases in candidates if all(b in cone for b in bases)]
        if views:
            n = sum(1 for j in views for ch in pending[j].changes if ch.what == "output")
            what = f"{n} output(s) kept are slices of a tensor whose size follows it (a view beside its base)"
            return fold_into(pending, i, views, what)
    return NOTHING


RECOGNIZER = Recognizer("kept_view", _recognize)
