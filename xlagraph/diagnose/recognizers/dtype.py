"""`dtype`: an element type changed (autocast, `.half()`, float64 numpy batches).

The raw difference names the inputs and outputs whose element type changed; the computation in
between is the same root reason and is folded in: regions that run the same ops (`convert`s
aside) or that convert to and from the changed types. Autocast that keeps its inputs and results
in f32 shows only inside: regions that convert to a low-precision type in one graph only.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import TWIN_OUTPUT, Cause, CauseKind, Change
from xlagraph.diagnose.collectives import collectives
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_user_location, user_frames
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.recognizers._assignments import assigned_in_function
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._dataflow import same_ops, upstream
from xlagraph.diagnose.recognizers._deciding_loop import sync_lines
from xlagraph.diagnose.recognizers._precision import switch_lines
from xlagraph.diagnose.recognizers._source import lines_matching, user_files
from xlagraph.diagnose.shapes import dims_of, element_type
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of
from xlagraph.opcodes import RESTATES

__all__ = ["RECOGNIZER"]

_FOLDED = (CauseKind.STRUCTURE, CauseKind.CONSTANT_VALUE, CauseKind.ATTRIBUTE, CauseKind.LAYOUT)
# The user's line that turns low precision on: ops under autocast carry the lines of the model's
# code, not of the `with` that wraps the call, so it is looked up in the user's files.
_AUTOCAST = re.compile(r"\bautocast\s*\(")
# A whole model or tensor cast to a floating type in the user's code (`model.to(torch.bfloat16)`).
_CAST = re.compile(
    r"\.to\(\s*(dtype\s*=\s*)?torch\.(bfloat16|float16|half|float32|float64|float)\b|\.(half|bfloat16|float|double)\(\s*\)"
)
_FLOAT = frozenset({"f64", "f32", "f16", "bf16"})
_CONVERT = frozenset({"convert"})  # what a type change adds or drops between the same ops
# ...and where a region's ops read a gradient: in f32 a view of its dot (a reshape, a transpose),
# in low precision the dot's convert back to f32, with no view between.
_RESTATED = RESTATES - {"broadcast"}
_LOW = frozenset({"bf16", "f16", "f8e4m3fn", "f8e5m2", "f8e4m3", "f8e5m2fnuz", "f8e4m3fnuz"})


_INT_HINT = fix("dtype.integer")
# Where float64 comes from in a PyTorch script: numpy (`torch.from_numpy`, arrays made by `np.`),
# or an explicit double.
_DOUBLE = re.compile(r"\bfrom_numpy\(|\bnp\.|\bnumpy\b|\.double\(\)|float64")


def _converts(evidence: Evidence, cause: Cause, types: frozenset[str]) -> tuple[int, int]:
    """How many converts to or from one of `types` each side of the region has (an op run in
    bf16 and converted back to f32 is as much another precision as an f32 op cast down)."""
    counts = [0, 0]
    for canon, ins in evidence.instructions(cause):
        if ins.opcode != "convert":
            continue
        if element_type(ins.shape.split("{")[0]) in types or _operand_type(canon, ins) in types:
            counts[canon is evidence.right] += 1
    return counts[0], counts[1]


def _operand_type(canon, ins) -> str:  # type: ignore[no-untyped-def]
    if not ins.operands:
        return ""
    for comp in canon.module.computations:
        operand = comp.by_name.get(ins.operands[0])
        if operand is not None and ins.name in comp.by_name:
            return element_type(operand.shape.split("{")[0])
    return ""


def _retyped_collectives(evidence: Evidence) -> bool:
    """The same collectives, in order, over the same groups: only their operands' element types
    differ (tensor parallelism in bf16 reduces bf16 partial sums over the same ranks)."""
    left, right = collectives(evidence.left), collectives(evidence.right)
    return (
        bool(left)
        and len(left) == len(right)
        and any(a.operands != b.operands for a, b in zip(left, right, strict=True))
        and all(
            a.kind == b.kind
            and a.groups == b.groups
            and a.dimensions == b.dimensions
            and [dims_of(x) for x in a.operands] == [dims_of(y) for y in b.operands]
            for a, b in zip(left, right, strict=True)
        )
    )


def _scalars_of(evidence: Evidence, cause: Cause, types: frozenset[str]) -> bool:
    """Inputs added or dropped that are all scalars of the types the change is between."""
    if cause.kind not in (CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED):
        return False
    shapes = [strip_layout(ins.shape) for _, ins in evidence.instructions(cause)]
    return bool(shapes) and all(s.endswith("[]") and element_type(s) in types for s in shapes)


# Ops that make a PyTorch view of a tensor (`w.grad` as the transpose of its dot, a bias gradient
# reshaped from its sum): torch_xla returns the view's base too while the view is alive.
_VIEWS = frozenset({"reshape", "transpose", "bitcast", "copy", "broadcast", "slice"})


def _views_of_bases(entry: CanonicalComputation) -> dict[str, list[str]]:
    """Each output of `entry` that is the base of other outputs through view ops -> those views."""
    users, outputs = users_of(entry), set(entry.outputs)
    found: dict[str, list[str]] = {}
    for base in entry.outputs:
        stack, seen = list(users.get(base, ())), set[str]()
        while stack:
            name = stack.pop()
            if name in seen or entry.computation.by_name[name].opcode not in _VIEWS:
                continue
            seen.add(name)
            if name in outputs:
                found.setdefault(base, []).append(name)
            stack += users.get(name, ())
    return found


def _tensor_key(entry: CanonicalComputation, name: str) -> tuple[str, str]:
    """An output as a tensor the step returns, whatever its floating-point precision."""
    shape = strip_layout(entry.instruction(name).shape)
    kind = element_type(shape)
    return ("float" if kind in _FLOAT | _LOW else kind, dims_of(shape))


def _view_bases(evidence: Evidence, cause: Cause) -> set[str]:
    """The outputs `cause` adds or removes that follow from the type change: in f32 a gradient is
    a view of its dot, whose base torch_xla returns beside it; in the other precision it is the
    `convert` of a low-precision dot, with no base to return. With each graph's view bases set
    aside, both return the same tensors; the graph with more bases returns that many more outputs,
    and the output pairing (of look-alike layers) may have called any of them removed, a base or
    its view, so they are told apart by count and shape, not by pair. A tensor the step stops (or
    starts) keeping alive is no base and has no look-alike on the other side: it stays named."""
    removed = cause.kind is CauseKind.OUTPUT_REMOVED
    if not removed and cause.kind is not CauseKind.OUTPUT_ADDED:
        return set()
    mine, theirs = (evidence.left.entry, evidence.right.entry)[:: 1 if removed else -1]
    own_bases, other_bases = _views_of_bases(mine), _views_of_bases(theirs)
    budget = len(own_bases) - len(other_bases)
    if budget <= 0:
        return set()
    casts = {_tensor_key(theirs, o) for o in theirs.outputs if theirs.instruction(o).opcode == "convert"}
    cast_bases = {b for b, views in own_bases.items() if any(_tensor_key(mine, v) in casts for v in views)}
    if len(cast_bases) < budget:
        return set()
    # Tensors by shape this side returns more of than the other, bases aside: really added or dropped.
    surplus = Counter(_tensor_key(mine, o) for o in mine.outputs if o not in own_bases) - Counter(
        _tensor_key(theirs, o) for o in theirs.outputs if o not in other_bases
    )
    heads = [ch.left if removed else ch.right for ch in cause.changes if ch.what == "output"]
    # A base first; then a look-alike the other graph returns too, which the pairing gave a base's twin.
    candidates = [h for h in heads if h in cast_bases] + [
        h for h in heads if h not in own_bases and not _take(surplus, _tensor_key(mine, h))
    ]
    return set(candidates[:budget])


def _take(counts: Counter[tuple[str, str]], key: tuple[str, str]) -> bool:
    """Whether `counts` holds one more `key` (taken off it)."""
    if counts[key] <= 0:
        return False
    counts[key] -= 1
    return True


def _split_outputs(evidence: Evidence, cause: Cause, bases: set[str]) -> tuple[Cause, Cause]:
    """(the part of an output cause about `bases`, the part about its other outputs), each with
    the instructions that compute its outputs."""
    removed = cause.kind is CauseKind.OUTPUT_REMOVED
    comp = (evidence.left if removed else evidence.right).entry
    names = cause.left if removed else cause.right
    parts = []
    for keep in (True, False):
        changes = tuple(ch for ch in cause.changes if ((ch.left if removed else ch.right) in bases) is keep)
        heads = [ch.left if removed else ch.right for ch in changes]
        cone = upstream(comp.operands, heads)
        own = tuple(n for n in names if n in cone)
        listed = fmt_list([f"output {ch.old or ch.new}" for ch in changes])
        n = len(changes)
        summary = (
            f"B returns {n} tensor{'s' if n > 1 else ''} fewer than A ({listed})"
            if removed
            else f"B returns {n} more tensor{'s' if n > 1 else ''} than A ({listed})"
        )
        side = {"left": own} if removed else {"right": own}
        # (the folded part cites no line: the cause's lines are its other outputs', a probe's own)
        lines = {"sources": (), "library": ()} if keep else {}
        parts.append(replace(cause, summary=summary, changes=changes, **side, **lines))
    return parts[0], parts[1]


def _same_tensors(evidence: Evidence) -> bool:
    """With each graph's view bases set aside, both return the same tensors (by count and shape,
    in any precision): every output one graph returns and the other does not is a base or the
    twin of one the other returns, whichever outputs the pairing matched (it may match a base with
    the other graph's cast of the same shape, leaving that shape's view unpaired)."""
    left, right = evidence.left.entry, evidence.right.entry
    lb, rb = _views_of_bases(left), _views_of_bases(right)
    return Counter(_tensor_key(left, o) for o in left.outputs if o not in lb) == Counter(
        _tensor_key(right, o) for o in right.outputs if o not in rb
    )


def _swapped_outputs(evidence: Evidence, causes: dict[int, Cause]) -> list[int]:
    """An output cause that adds tensors and one that removes as many of the same shapes (in any
    precision), or any such pair where both graphs return the same tensors bases aside, beside a
    type change: the same tensors (the weights written back), computed another way in the other
    precision, so the output pairing could not match them, not tensors kept alive on some steps
    (one kept alive has no twin the other graph stops returning)."""
    sides = []
    for kind, graph in ((CauseKind.OUTPUT_ADDED, evidence.right), (CauseKind.OUTPUT_REMOVED, evidence.left)):
        found = [i for i, c in causes.items() if c.kind is kind]
        if len(found) != 1:
            return []
        changes = [ch for ch in causes[found[0]].changes if ch.what == "output"]
        heads = [ch.right if kind is CauseKind.OUTPUT_ADDED else ch.left for ch in changes]
        if not heads:
            return []
        sides.append((found[0], Counter(_tensor_key(graph.entry, h) for h in heads)))
    (a, added), (r, removed) = sides
    return [a, r] if added == removed or _same_tensors(evidence) else []


def _twin_or_base(ch: Change, bases: set[str]) -> Change:
    """An output folded into the type change that is no view's base is the twin of one the other
    graph returns (the same tensor computed another way in the other precision): said so, not
    called a base."""
    if ch.what != "output" or (ch.left or ch.right) in bases:
        return ch
    return ch._replace(what=TWIN_OUTPUT)


def _whole_model(evidence: Evidence, pending: tuple[Cause, ...], core: list[int]) -> bool:
    """Every floating-point input of A changed element type (`model.to(torch.bfloat16)`)."""
    left = evidence.left.entry
    floats = {p for p in left.param_number if element_type(left.instruction(p).shape) in _FLOAT}
    retyped = {ch.left for i in core for ch in pending[i].changes if ch.what == "dtype"}
    return len(floats) > 1 and floats <= retyped


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    core = [i for i, c in enumerate(pending) if c.kind is CauseKind.DTYPE]
    if core and _retyped_collectives(evidence):
        core += [i for i, c in enumerate(pending) if c.kind is CauseKind.COLLECTIVE]
    types = frozenset(
        element_type(v)
        for i in core
        for ch in pending[i].changes
        if ch.what == "dtype"
        for v in (ch.old, ch.new)
    )
    autocast = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.STRUCTURE and (n := _converts(evidence, c, _LOW | types))[0] != n[1]
    ]
    folded = [
        i
        for i, c in enumerate(pending)
        if c.kind in _FOLDED
        and (
            i in autocast
            # Regions that run the same ops rewired are the type change's cascade.
            or (
                (core or autocast)
                and (c.kind is not CauseKind.STRUCTURE or same_ops(evidence, c, aside=_CONVERT))
            )
        )
    ]
    # Scalars passed as data in the new type (an eps, a scale), beside the type change itself.
    folded += [i for i, c in enumerate(pending) if core and _scalars_of(evidence, c, types)]
    # Outputs that were (or became) the bases of views the other precision computes by a cast;
    # the other outputs of the same cause stay named, split off for the recognizers after this.
    split_off: list[Cause] = []
    views: dict[int, Cause] = {}
    all_bases: set[str] = set()
    for i, c in enumerate(pending):
        bases = _view_bases(evidence, c) if core or autocast else set()
        if not bases:
            continue
        all_bases |= bases
        folded.append(i)
        if len(bases) == sum(1 for ch in c.changes if ch.what == "output"):
            continue
        views[i], other = _split_outputs(evidence, c, bases)
        split_off.append(other)
    if core or autocast:
        # (an output cause partly folded as view bases offers the rest it split off)
        left_over = {i: c for i, c in enumerate(pending) if i not in folded}
        left_over |= {i: split_off[k] for k, i in enumerate(views)}
        for i in _swapped_outputs(evidence, left_over):
            if i in views:
                split_off.remove(left_over[i])
                del views[i]
            else:
                folded.append(i)
    rest = [i for i, c in enumerate(pending) if c.kind is CauseKind.STRUCTURE and i not in folded]
    if (
        core
        and rest
        and (
            same_ops(evidence, *(pending[i] for i in rest), aside=_RESTATED)
            or _whole_model(evidence, pending, core)
        )
    ):
        # One op in f32 only in A and its bf16 twin only in B: the same op retyped. Or every
        # floating-point input changed type: XLA compiles another program around it (converts,
        # f32 accumulation, other fusions), all of it following from the one change.
        folded += rest
    integers = bool(types) and all(t[:1] in ("s", "u") for t in types)
    if not folded and not (core and integers):
        return NOTHING
    if core:
        summary = pending[core[0]].summary
    else:
        low = sorted(
            {element_type(ins.shape) for i in autocast for _, ins in evidence.instructions(pending[i])} & _LOW
        )
        summary = (
            f"ops run in {', '.join(low) or 'another precision'} in one graph only (converts in "
            f"{len(autocast)} region(s)): autocast or a .to(dtype) inside the step, on some steps only"
        )
    if integers:
        summary += "; integer data (ids, labels) from sources that make another integer type"
    cause = merge(
        CauseKind.DTYPE,
        summary,
        [views.get(i, pending[i]) for i in core + folded],
        hint=_INT_HINT if integers else "",
    )
    cause = replace(cause, changes=tuple(_twin_or_base(ch, all_bases) for ch in cause.changes))
    floats = bool(types) and types <= _FLOAT
    # The statement that switches precision around the ops' own lines (a layer's forward): the
    # enclosing `with torch.autocast(...)` and what sets its arguments, or a cast in the loop.
    # (with the user lines of its converts: a region's first ops may carry none of the user's)
    converts = {
        f"{f.file}:{f.line}"
        for canon, ins in evidence.instructions(cause)
        if ins.opcode == "convert"
        for f in user_frames(canon.module.frames_of(ins))[:1]
        if f.line > 0
    }
    switches = (
        switch_lines(evidence.instructions(cause), [*sync_lines(evidence.context), *sorted(converts)[:4]])
        if (core and floats and "f64" not in types) or autocast
        else []
    )
    if switches:
        cause = replace(cause, sources=tuple(dict.fromkeys(switches + list(cause.sources)))[:6])
    elif core and floats and not any(is_user_location(x) for x in cause.sources):
        casts = lines_matching(user_files(evidence), _CAST, limit=2) or lines_matching(
            user_files(evidence), _AUTOCAST
        )
        if casts:
            cause = replace(cause, sources=tuple(dict.fromkeys(casts + list(cause.sources)))[:6])
    if "f64" in types:
        # A tensor the step reads went float64: cite where it is made (from numpy, often at the
        # end of an epoch), not only the line that reads it.
        made = [w for x in cause.sources if is_user_location(x) and (w := assigned_in_function(x, _DOUBLE))]
        if made:
            cause = replace(cause, sources=tuple(dict.fromkeys(made + list(cause.sources)))[:6])
    if autocast and not core and not switches:
        switches = lines_matching(user_files(evidence), _AUTOCAST)
        if switches:
            cause = replace(cause, sources=tuple(dict.fromkeys(switches + list(cause.sources)))[:6])
    return Recognized((cause,), frozenset(core + folded), tuple(split_off))


RECOGNIZER = Recognizer("dtype", _recognize)
