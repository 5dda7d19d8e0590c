"""Special scalars: PyTorch/XLA bakes the Python scalars 0 and 1 into the graph as constants and
passes every other value as a device-data input. A learning rate that starts at 0.0 (warm-up), a
`mul_(0.0 if cond else 1.0)`, a loss scale of 1: on that step the value is a constant, on the
next an input (or another constant), so the graph changes.
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.common import is_number
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._common import merge, renamed

__all__ = ["RECOGNIZER"]

HINT = (
    "PyTorch/XLA bakes the Python scalars 0 and 1 as constants and passes other values as inputs: "
    "a value that is 0 or 1 on some steps (a learning rate warming up from 0.0, mul_(0.0 if ... "
    "else 1.0)) changes the graph; start warm-up at a small non-zero value, or pass it as a "
    "device tensor (torch.tensor(x, device=...)) updated in place"
)
OTHER_HINT = (
    "a Python scalar is baked into the graph as a constant: keep it fixed, or make it a device "
    "tensor (torch.tensor(x, device=...)) that you update in place"
)


def _special(value: str) -> bool:
    return is_number(value) and float(value) in (0.0, 1.0)


def _value(change_text: str) -> str:
    return change_text.rsplit(" ", 1)[-1]


def _scalar_constants(canon: CanonicalModule, names: tuple[str, ...]) -> list[str]:
    by_name = {ins.name: ins for c in canon.module.computations for ins in c.instructions}
    return [
        by_name[n].payload
        for n in names
        if n in by_name and by_name[n].opcode == "constant" and _special(by_name[n].payload.strip())
    ]


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    out: list[Cause] = []
    consumed: set[int] = set()
    for i, c in enumerate(pending):
        if c.kind is not CauseKind.CONSTANT_VALUE:
            continue
        special = any(_special(_value(ch.old)) or _special(_value(ch.new)) for ch in c.changes)
        if special:
            out.append(
                renamed(c, CauseKind.CONSTANT_VALUE, c.summary + ": 0 and 1 are baked as constants", HINT)
            )
        else:
            out.append(
                renamed(
                    c,
                    CauseKind.CONSTANT_VALUE,
                    c.summary + ": a Python scalar baked into the graph",
                    OTHER_HINT,
                )
            )
        consumed.add(i)
    # A value baked as 0/1 on one side and passed as a scalar input on the other.
    for kind, side, other, where in (
        (CauseKind.PARAMETER_ADDED, "right", evidence.left, "A"),
        (CauseKind.PARAMETER_REMOVED, "left", evidence.right, "B"),
    ):
        params = [i for i, c in enumerate(pending) if c.kind is kind and i not in consumed]
        if not params:
            continue
        scalar = all(
            (ch.new if side == "right" else ch.old).split(": ", 1)[-1].endswith("[]")
            for i in params
            for ch in pending[i].changes
        )
        regions = [i for i, c in enumerate(pending) if c.kind is CauseKind.STRUCTURE and i not in consumed]
        baked = [
            v
            for i in regions
            for v in _scalar_constants(other, pending[i].left if side == "right" else pending[i].right)
        ]
        if not (scalar and baked):
            continue
        n = sum(len(pending[i].changes) for i in params)
        summary = (
            f"{n} scalar input(s) in {'B' if side == 'right' else 'A'} replace the constant(s) "
            f"{', '.join(sorted(set(baked)))} baked into {where}: a Python scalar that was 0 or 1 on one step"
        )
        out.append(
            merge(CauseKind.CONSTANT_VALUE, summary, [pending[i] for i in params + regions], hint=HINT)
        )
        consumed.update(params + regions)
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


RECOGNIZER = Recognizer("special_scalar", _recognize)
