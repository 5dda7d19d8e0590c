"""Eager mode's half of a report: torch_xla compiles each op on its own (`EagerOpCompileTime`), once
per op and input shapes; `diagnose.eager` judges each op compiled after the first step a recompile
or new work. Each op module names torch's op (its metadata's `op_type`, `aten::addmm`) and the line
it ran at; an input's metadata names the line that made the input.
"""

from __future__ import annotations

from collections import Counter
from itertools import groupby

from xlagraph.diagnose.eager import OpShapes, eager_fix, later_ops
from xlagraph.errors import XlagraphError
from xlagraph.ir import Instruction, Module, strip_layout
from xlagraph.parse.sources import load_module
from xlagraph.report.model import EagerOp, EagerSection, EagerStep
from xlagraph.runlog import EagerCompile, RunLog

__all__ = ["eager_section", "op_of"]

_NOT_OPS = frozenset({"parameter", "tuple", "get-tuple-element"})


def op_of(module: Module) -> tuple[str, str, str, tuple[str, ...], tuple[str, ...]]:
    """(torch's op, its shapes `in, in -> out`, its line, the inputs' shapes, their lines)."""
    entry = module.entry
    params = entry.parameters
    work = [i for i in entry.instructions if i.opcode not in _NOT_OPS]
    main = _main(entry.root, entry.by_name) or (work[-1] if work else entry.root)
    md = main.metadata
    op = _torch_name(md.op_type) if md is not None and md.op_type else main.opcode
    ins = tuple(strip_layout(p.shape) for p in params)
    out = strip_layout(main.shape)
    return op, f"{', '.join(ins) or '()'} -> {out}", main.location, ins, tuple(p.location for p in params)


def _main(root: Instruction, by_name: dict[str, Instruction]) -> Instruction | None:
    """What the module computes: the root, or the first value its output tuple holds."""
    if root.opcode != "tuple":
        return root
    for name in root.operands:
        if (i := by_name.get(name)) is not None and i.opcode not in _NOT_OPS:
            return i
    return None


def _torch_name(op_type: str) -> str:
    ns, sep, name = op_type.partition("__")
    return f"{ns}::{name}" if sep and ns in ("aten", "xla", "prim") else op_type


def eager_section(log: RunLog) -> EagerSection | None:
    if not log.eager and not log.eager_compiles_reported:
        return None
    first_step = min((c.step for c in log.eager), default=0)
    read = [(c, r) for c in log.eager if (r := _read(c)) is not None]
    ops = [
        OpShapes(c.step, op, at, (*ins, shapes.rpartition(" -> ")[2]), lines)
        for c, (op, shapes, at, ins, lines) in read
    ]
    judged = later_ops(ops, first_step)
    later = []  # each op compiled after the first step, its changes
    for o in judged:
        c, (op, shapes, *_) = read[o.index]
        shown = f"{', '.join(o.was[:-1]) or '()'} -> {o.was[-1]}" if o.was is not None else ""
        later.append((EagerOp(c.step, op, shapes, o.at, shown, c.seconds), list(o.dims)))
    steps = tuple(_step(step, list(group)) for step, group in groupby(later, key=lambda x: x[0].step))
    return EagerSection(
        compiles=len(log.eager),
        reported=log.eager_compiles_reported,
        seconds=round(sum(c.seconds for c in log.eager), 6),
        first_step=first_step,
        by_step=tuple(sorted(Counter(c.step for c in log.eager).items())),
        steps=steps,
        fix=eager_fix(judged),
        unread=len(log.eager) - len(read),
    )


def _step(step: int, ops: list[tuple[EagerOp, list[str]]]) -> EagerStep:
    recompiled = tuple(o for o, _ in ops if o.was)
    new = tuple(o for o, _ in ops if not o.was)
    changes = Counter(d for o, dims in ops if o.was for d in dims).most_common(3)
    at = tuple(dict.fromkeys(o.at for o in recompiled if o.at))
    if recompiled:
        top = f": a dimension {changes[0][0]}" if changes else ""
        where = f" (inputs made at {', '.join(at[:3])})" if at else ""
        summary = f"eager mode compiled {len(recompiled)} op(s) again for new input shapes{top}{where}"
    else:
        summary = f"eager mode compiled {len(new)} new op(s), each once: ops not run before"
    return EagerStep(
        step=step,
        recompiled=recompiled,
        new=new,
        changes=tuple(f"{k} ({n})" for k, n in changes),
        at=at,
        seconds=round(sum(o.seconds for o, _ in ops), 6),
        summary=summary,
    )


def _read(c: EagerCompile) -> tuple[str, str, str, tuple[str, ...], tuple[str, ...]] | None:
    if not c.module:
        return None
    try:
        return op_of(load_module(c.module))
    except (XlagraphError, OSError, RecursionError):
        return None
