"""Eager mode's half of a report: torch_xla compiles each op on its own (`EagerOpCompileTime`), once
per op and input shapes. An op compiled in a later step than the first is a recompile where the
same op compiled before at the same call site (the line its metadata names) with other shapes
(`was`), and new work otherwise (an evaluation pass, a branch taken once): one op name compiled
earlier by other code with other shapes is that code's compile, not this one's. Each op module
names torch's op (its metadata's `op_type`, `aten::addmm`) and the line it ran at; an input's
metadata names the line that made the input.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import groupby

from xlagraph.diagnose.fixes import EAGER_SHAPE_FIX
from xlagraph.errors import XlagraphError
from xlagraph.ir import Instruction, Module, strip_layout
from xlagraph.parse.sources import load_module
from xlagraph.report.model import EagerOp, EagerSection, EagerStep
from xlagraph.runlog import EagerCompile, RunLog
from xlagraph.source_paths import is_library_path

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
    # (op, its call site) -> (step, its shapes, in and out); an op with no line (autograd's
    # backward) is one call site per op, as torch_xla records none for it
    seen: dict[tuple[str, str], list[tuple[int, tuple[str, ...]]]] = {}
    later: list[tuple[EagerOp, list[str]]] = []  # each op compiled after the first step, its changes
    unread = 0
    for c in log.eager:
        read = _read(c)
        if read is None:
            unread += 1
            continue
        op, shapes, at, ins, lines = read
        sig = (*ins, shapes.rpartition(" -> ")[2])
        before = seen.setdefault((op, at), [])
        if c.step != first_step:
            was = _closest(sig, [b for step, b in before if step < c.step])
            changed = [k for k in range(len(sig)) if was is not None and sig[k] != was[k]]
            made = [lines[k] for k in changed if k < len(lines) and lines[k] and not _library(lines[k])]
            user_at = made[0] if made else at if at and not _library(at) else ""
            shown = f"{', '.join(was[:-1]) or '()'} -> {was[-1]}" if was is not None else ""
            dims = [d for k in changed for d in _dims(was[k], sig[k])] if was is not None else []
            later.append((EagerOp(c.step, op, shapes, user_at, shown, c.seconds), dims))
        before.append((c.step, sig))
    steps = tuple(_step(step, list(group)) for step, group in groupby(later, key=lambda x: x[0].step))
    return EagerSection(
        compiles=len(log.eager),
        reported=log.eager_compiles_reported,
        seconds=round(sum(c.seconds for c in log.eager), 6),
        first_step=first_step,
        by_step=tuple(sorted(Counter(c.step for c in log.eager).items())),
        steps=steps,
        fix=EAGER_SHAPE_FIX if any(s.recompiled for s in steps) else "",
        unread=unread,
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


def _closest(sig: tuple[str, ...], before: Sequence[tuple[str, ...]]) -> tuple[str, ...] | None:
    """The earlier shapes of the op most like these: as many inputs, fewest shapes and then fewest
    dimensions that differ, the latest of equals."""
    same = [b for b in before if len(b) == len(sig)]
    if not same:
        return None

    def distance(b: tuple[str, ...]) -> tuple[int, int]:
        differ = [(x, y) for x, y in zip(b, sig, strict=True) if x != y]
        return len(differ), sum(len(_dims(x, y)) for x, y in differ)

    return min(reversed(same), key=distance)


def _library(location: str) -> bool:
    return is_library_path(location.rsplit(":", 1)[0])


def _dims(a: str, b: str) -> list[str]:
    """The dimension changes between two array shapes of one rank and dtype (`8 -> 11`)."""
    ta, _, da = a.partition("[")
    tb, _, db = b.partition("[")
    xs, ys = da.rstrip("]").split(","), db.rstrip("]").split(",")
    if ta != tb or len(xs) != len(ys):
        return [f"{a} -> {b}"]
    return [f"{x} -> {y}" for x, y in zip(xs, ys, strict=True) if x != y]
