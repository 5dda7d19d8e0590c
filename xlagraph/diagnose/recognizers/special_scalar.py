"""Special scalars: PyTorch/XLA bakes the Python scalars 0 and 1 (and -1: its test is |x| == 1)
into the graph as constants and passes every other value as a device-data input. A learning rate
that starts at 0.0 (warm-up) or peaks at exactly 1.0 (SGD's `alpha=-lr`), a
`mul_(0.0 if cond else 1.0)`, a loss scale of 1: on that step the value is a constant, on the
next an input (or another constant), so the graph changes.
"""

from __future__ import annotations

from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.numbers import is_number, payload
from xlagraph.diagnose.recognizers._assignments import scalar_origin
from xlagraph.diagnose.recognizers._causes import merge, renamed, with_number_origin
from xlagraph.diagnose.recognizers._dataflow import downstream, restated, same_ops
from xlagraph.diagnose.recognizers._special_values import special_value_origin
from xlagraph.match.users import users_of
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["RECOGNIZER", "matched_twin"]

HINT = fix("constant_value.zero_one")
OTHER_HINT = fix("constant_value.python_scalar")

TENSOR_HINT = fix("constant_value.tensor_from_numbers")


def _tensor_valued(evidence: Evidence, cause: Cause) -> bool:
    """Every constant the cause names holds more than one value (an arange, a list)."""
    found = [ins for _, ins in evidence.instructions(cause) if ins.opcode == "constant"]
    return bool(found) and all("[]" not in ins.shape for ins in found)


def _special(value: str) -> bool:
    # -1 too: SGD's add_(grad, alpha=-lr) at an lr of exactly 1.0 bakes constant(-1)
    return is_number(value) and abs(float(value)) in (0.0, 1.0)


def _constant_behind(comp, name: str) -> str:  # type: ignore[no-untyped-def]
    """The payload of the constant `name` restates; `` if it is none."""
    ins = comp.computation.by_name.get(restated(comp, name))
    return ins.payload.strip() if ins is not None and ins.opcode == "constant" else ""


def matched_twin(evidence: Evidence, param: str, side: str) -> str | None:
    """With the matching known: the 0/1 constant that the instruction paired with a reader of
    `param` reads at the same operand position. `` if none; None when there is no matching."""
    if not evidence.entry_match:
        return None
    here = (evidence.right if side == "right" else evidence.left).entry
    other = (evidence.left if side == "right" else evidence.right).entry
    match = evidence.entry_match
    paired = match if side == "right" else {a: b for b, a in match.items()}
    for u in _users(here, param):
        v = paired.get(u)
        if v is None or v not in other.operands:
            continue
        theirs = other.operands[v]
        if here.instruction(u).opcode in COMMUTATIVE:  # lowering may put the scalar either side
            places = range(len(theirs))
            # A constant this reader reads beside the input is its own operand, not the input's
            # twin: `grad * beta`, where the gradient of a loss is a broadcast 1 on both sides.
            own = [_constant_behind(here, o) for o in here.operands[u] if o != param]
        else:
            places = [k for k, o in enumerate(here.operands[u]) if o == param and k < len(theirs)]
            own = []
        for k in places:
            if not _special(value := _constant_behind(other, theirs[k])):
                continue
            if value in own:
                own.remove(value)
                continue
            return value
    return ""


def _baked_twin(evidence: Evidence, param: str, side: str) -> str:
    """The 0/1 constant the other graph has where this one reads scalar input `param`: the
    matched reader reads a constant 0 or 1 there (a value baked on one step). Without a matching,
    an op of the same kind and shape whose operand is (a broadcast of) a constant 0 or 1."""
    matched = matched_twin(evidence, param, side)
    if matched is not None:
        return matched
    here = (evidence.right if side == "right" else evidence.left).entry
    other = (evidence.left if side == "right" else evidence.right).entry
    by_name = other.computation.by_name
    wanted = {
        (ins.opcode, ins.shape.split("{")[0]) for u in _users(here, param) for ins in [here.instruction(u)]
    }
    for ins in other.computation.instructions:
        if (ins.opcode, ins.shape.split("{")[0]) not in wanted:
            continue
        for o in ins.operands:
            c = by_name.get(o)
            if (
                c is not None
                and c.opcode == "constant"
                and c.shape.startswith(_scalar_type(here, param))
                and _special(c.payload.strip())
            ):
                return c.payload.strip()
    return ""


def _constant_output(evidence: Evidence, cause: Cause) -> bool:
    """An extra (or missing) output that is only a constant 0 or 1: the value materialized as a
    tensor on the step it was baked (`torch.tensor(0.0, device=...)`)."""
    if cause.kind not in (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED):
        return False
    found = evidence.instructions(cause)
    return bool(found) and all(ins.opcode == "constant" and _special(ins.payload.strip()) for _, ins in found)


def _cascade(evidence: Evidence, cause: Cause, names: tuple[str, ...], flows: set[str]) -> bool:
    """A region that runs the same ops on both sides, only wired otherwise, all of it computed
    from the baked value (`flows`: what reads its readers): the value's work flowing on. Where a
    term vanishes (`ema * 1 + p * 0`) the graph's look-alike halves (two views of a batch through
    one network) no longer differ where they did, and the matching may pair them across."""
    return (
        cause.kind is CauseKind.STRUCTURE
        and bool(names)
        and all(n in flows for n in names)
        and same_ops(evidence, cause)
    )


def _scalar_type(comp, param: str) -> str:  # type: ignore[no-untyped-def]
    return comp.instruction(param).shape.split("[", 1)[0] + "[]"


def _users(comp, name: str) -> list[str]:  # type: ignore[no-untyped-def]
    return users_of(comp).get(name, [])


def _swapped_operand(evidence: Evidence, cause: Cause) -> str:
    """The 0/1 constant a region reads where the other graph reads a scalar input that both
    graphs have (torch_xla uploads equal scalars once, so a 0.5 may ride on an input another
    line made): every changed instruction is paired, of the same op, and differs in one operand
    only, a constant 0 or ±1 on one side and a scalar input on the other. `` if not that."""
    if cause.kind is not CauseKind.STRUCTURE or not evidence.entry_match or not cause.right:
        return ""
    if len(cause.left) != len(cause.right):  # an instruction of one side only: more than a swap
        return ""
    left, right = evidence.left.entry, evidence.right.entry
    found = ""
    for r in cause.right:
        lname = evidence.entry_match.get(r)
        if lname not in cause.left or left.instruction(lname).opcode != right.instruction(r).opcode:
            return ""
        mine, theirs = right.operands.get(r, ()), left.operands.get(lname, ())
        if len(mine) != len(theirs):
            return ""
        differ = [k for k in range(len(mine)) if evidence.entry_match.get(mine[k]) != theirs[k]]
        if len(differ) != 1:
            return ""
        k = differ[0]
        value = ""
        for const_side, const, param_side, param in (
            (left, theirs[k], right, mine[k]),
            (right, mine[k], left, theirs[k]),
        ):
            p = restated(param_side, param)
            if p in param_side.param_number and param_side.instruction(p).shape.split("{")[0].endswith("[]"):
                value = value or _constant_behind(const_side, const)
        if not _special(value):
            return ""
        found = found or value
    return found


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    out: list[Cause] = []
    consumed: set[int] = set()
    for i, c in enumerate(pending):
        if c.kind is not CauseKind.CONSTANT_VALUE:
            continue
        special = any(_special(payload(ch.old)) or _special(payload(ch.new)) for ch in c.changes)
        if _tensor_valued(evidence, c):
            what, hint = ": a tensor made from Python numbers", TENSOR_HINT
        elif special:
            what, hint = ": 0 and 1 are baked as constants", HINT
        else:
            what, hint = ": a Python scalar baked into the graph", OTHER_HINT
        out.append(renamed(c, CauseKind.CONSTANT_VALUE, c.summary + what, hint))
        consumed.add(i)
    # A value baked as 0/1 on one side and passed as a scalar input on the other.
    for kind, side in ((CauseKind.PARAMETER_ADDED, "right"), (CauseKind.PARAMETER_REMOVED, "left")):
        params = [i for i, c in enumerate(pending) if c.kind is kind and i not in consumed]
        names = [p for i in params for p in getattr(pending[i], side)]
        comp = (evidence.right if side == "right" else evidence.left).entry
        if not names or not all(comp.instruction(p).shape.split("{")[0].endswith("[]") for p in names):
            continue
        baked = [_baked_twin(evidence, p, side) for p in names]
        if not all(baked):
            continue
        readers = {u for p in names for u in _users(comp, p)}
        flows = downstream(users_of(comp), readers)
        regions = [
            i
            for i, c in enumerate(pending)
            if i not in consumed
            and (
                (c.kind is CauseKind.STRUCTURE and readers & set(getattr(c, side)))
                or _constant_output(evidence, c)
                or _cascade(evidence, c, getattr(c, side), flows)
            )
        ]
        this, other = ("B", "A") if side == "right" else ("A", "B")
        # Each input with the value the other graph bakes in its place: which term vanished.
        values = ", ".join(f"input {comp.param_number[p]} is {v}" for p, v in zip(names, baked, strict=True))
        summary = (
            f"{len(names)} scalar input(s) of {this} are constants (0 or ±1) baked into {other} at the "
            f"same place ({values}): a Python scalar that was 0 or ±1 on one step (e.g. a learning rate "
            "warming up from 0.0, or peaking at exactly 1.0)"
        )
        out.append(
            merge(CauseKind.CONSTANT_VALUE, summary, [pending[i] for i in params + regions], hint=HINT)
        )
        consumed.update(params + regions)
    # The same, where the input was there on both sides (shared with another scalar of equal value).
    swaps = [
        (i, v) for i, c in enumerate(pending) if i not in consumed and (v := _swapped_operand(evidence, c))
    ]
    if swaps:
        summary = (
            f"{len(swaps)} region(s) read a constant {swaps[0][1]} in one graph where the other reads a "
            "scalar input: a Python scalar that was 0 or ±1 on one step (baked) and another value on the "
            "other (uploaded)"
        )
        out.append(merge(CauseKind.CONSTANT_VALUE, summary, [pending[i] for i, _ in swaps], hint=HINT))
        consumed.update(i for i, _ in swaps)
    out = [_with_origin(c) for c in out]
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


def _with_origin(cause: Cause) -> Cause:
    """The line that made the scalar a tensor, before the line that uses it; else where the
    Python number the line reads is computed; else where a name it reads is set to a literal
    0 or ±1 (the step that bakes it)."""
    made = [m for loc in cause.sources[:2] for m in scalar_origin(loc)]
    if made:
        return replace(cause, sources=tuple(dict.fromkeys([*made, *cause.sources]))[:6])
    numbered = with_number_origin(cause)
    if numbered is not cause:
        return numbered
    for loc in cause.sources[:2]:
        name, literal, lines = special_value_origin(loc) if is_user_location(loc) else ("", "", [])
        if lines:
            return replace(
                cause,
                summary=f"{cause.summary}; `{name}` is set to exactly {literal} at {lines[0]}",
                sources=tuple(dict.fromkeys([*lines, *cause.sources]))[:6],
            )
    return cause


RECOGNIZER = Recognizer("special_scalar", _recognize)
