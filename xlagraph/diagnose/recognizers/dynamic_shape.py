"""`dynamic_shape`: a shape that comes from data values. A boolean mask (`x[mask]`), `nonzero`,
`unique`, `masked_select` or `bincount` without `minlength` gives a tensor whose size depends on
the values, so every new count is a new input shape (and the op itself syncs to learn the size).

Evidence: an input shape change (or a cut graph) whose user line, or the sync's line, indexes
with a mask or calls one of those ops; or data-dependent-size ops in the graph's metadata.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._assignments import assigned_from, assignment_above
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._source import source_text
from xlagraph.ir import Instruction
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER", "data_sized"]

_DATA_SIZED = re.compile(
    r"\.nonzero\(|torch\.nonzero\(|\bunique(_consecutive)?\(|masked_select\(|argwhere\("
    r"|\bbincount\((?![^#]*minlength)"  # max(x) + 1 counts unless minlength fixes the length
    r"|torch\.where\([^,()]*(\([^()]*\))?[^,()]*\)"  # torch.where(cond): the indices
    r"|\[[^\]]*mask[^\]]*\]|\[[^\]]*\.bool\(\)[^\]]*\]"  # x[attention_mask.bool()], x[loss_mask]
    r"|\[[^\]]*\b(keep|valid|sel)\w*\s*\]"
    r"|\[[^\]\[]*(>|<|==|!=)[^\]\[]*\]"  # x[labels != -100]
)
_OP_TYPES = ("nonzero", "masked_select", "unique", "argwhere")


def data_sized(text: str) -> bool:
    """A line of Python that makes a tensor whose size depends on values."""
    return bool(_DATA_SIZED.search(text))


_INDEX = re.compile(r"\[\s*~?\s*([A-Za-z_]\w*)\s*\]")
_BOOLEAN = re.compile(
    r"(==|!=|<=|>=|<|>|\.bool\(\)|\bisnan\(|\bisfinite\(|\blogical_|\.eq\(|\.ne\(|\.gt\(|\.lt\()"
)


def _mask_variable(loc: str) -> bool:
    """`x[real]` where `real = labels != IGNORE` a few lines above: a boolean mask by another name."""
    made = assignment_above(loc, 30, set(_INDEX.findall(source_text(loc).split("#", 1)[0])))
    return made is not None and bool(_BOOLEAN.search(ast.unparse(made.value)))  # type: ignore[attr-defined]


def _coordinates(evidence: Evidence, cause: Cause) -> bool:
    """Integer inputs `s64[n, k]` whose `n` changed: the coordinates `nonzero` returns (k = the
    mask's rank), which the step computed and the next graph takes as data. A column of ids has
    that shape too (`s64[n, 1]`): what tells coordinates is their use, each row one position
    (`x[mask]` is `x[tuple(mask.nonzero().T)]`), so the new graph must index with them."""
    changes = [ch for ch in cause.changes if ch.what == "shape"]
    ok = [
        ch
        for ch in changes
        if ch.old.startswith(("s64[", "s32["))
        and ch.new.startswith(("s64[", "s32["))
        and (a := ch.old.split("[", 1)[1].rstrip("]").split(","))
        and len(a) == 2
        and a[1] in ("1", "2", "3", "4")
        and ch.new.split("[", 1)[1].rstrip("]").split(",")[1:] == a[1:]
        and _indexes_with(evidence.right.entry, ch.right, int(a[1]))
    ]
    return bool(changes) and len(ok) == len(changes)


def _indexes_with(entry: CanonicalComputation, name: str, k: int) -> bool:
    """`name`'s values, through integer arithmetic (slices per column, negative indices wrapped,
    columns joined), are the start indices of a gather or scatter whose index vectors have `k`
    components: positions in a rank-k tensor, not values read as data."""
    if name not in entry.computation.by_name:
        return False
    users = users_of(entry)
    seen = {name}
    stack = [name]
    while stack:
        value = stack.pop()
        for u in users.get(value, ()):
            ins = entry.instruction(u)
            slots = [i for i, o in enumerate(entry.operands.get(u, ())) if o == value]
            index, dims = _index_operand(ins, len(entry.operands.get(u, ())))
            if index >= 0:
                if index in slots and len(re.findall(r"\d+", ins.attribute(dims) or "")) == k:
                    return True
            elif u not in seen and ins.shape.startswith(("s", "u", "pred")):
                seen.add(u)
                stack.append(u)
    return False


def _index_operand(ins: Instruction, count: int) -> tuple[int, str]:
    """Where a gather or scatter reads its start indices, and the attribute that maps each index
    vector's components to the operand's dimensions; (-1, "") for other ops."""
    if ins.opcode == "gather":
        return 1, "start_index_map"
    if ins.opcode == "scatter":  # inputs..., indices, updates...
        return (count - 1) // 2, "scatter_dims_to_operand_dims"
    return -1, ""


def _data_sized(evidence: Evidence, cause: Cause) -> str:
    for loc in (*cause.sources, evidence.context.call_site):
        if loc and (_DATA_SIZED.search(source_text(loc)) or _mask_variable(loc)):
            return loc
    for loc in cause.sources:
        origin = assigned_from(loc, _DATA_SIZED, 30)
        if origin:
            return origin
    if _coordinates(evidence, cause):
        return next((loc for loc in cause.sources if loc), "the inputs' shapes (nonzero coordinates)")
    for _, ins in evidence.instructions(cause):
        md = ins.metadata
        if md is not None and any(op in md.op_type for op in _OP_TYPES):
            return md.location or md.op_type
    return ""


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    shapes = [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_SHAPE]
    for i in shapes:
        where = _data_sized(evidence, pending[i])
        if not where:
            continue
        summary = (
            f"a shape that comes from data values (boolean mask, nonzero, unique, masked_select) at {where}: "
            + pending[i].summary
        )
        cause = merge(CauseKind.DYNAMIC_SHAPE, summary, [pending[i]])
        if ":" in where and where not in cause.sources:
            cause = replace(cause, sources=(where, *cause.sources)[:6])
        return Recognized((cause,), frozenset({i}))
    return NOTHING


RECOGNIZER = Recognizer("dynamic_shape", _recognize)
