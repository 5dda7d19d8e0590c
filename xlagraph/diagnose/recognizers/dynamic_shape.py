"""`dynamic_shape`: a shape that comes from data values. A boolean mask (`x[mask]`), `nonzero`,
`unique` or `masked_select` gives a tensor whose size depends on the values, so every new count
is a new input shape (and the op itself syncs to learn the size).

Evidence: an input shape change (or a cut graph) whose user line, or the sync's line, indexes
with a mask or calls one of those ops; or data-dependent-size ops in the graph's metadata.
"""

from __future__ import annotations

import re

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._common import merge, source_text

__all__ = ["RECOGNIZER", "data_sized"]

_DATA_SIZED = re.compile(
    r"\.nonzero\(|torch\.nonzero\(|\bunique(_consecutive)?\(|masked_select\(|argwhere\("
    r"|torch\.where\([^,()]*(\([^()]*\))?[^,()]*\)"  # torch.where(cond): the indices
    r"|\[[^\]]*mask[^\]]*\]|\[[^\]]*\.bool\(\)[^\]]*\]"  # x[attention_mask.bool()], x[loss_mask]
    r"|\[[^\]]*\b(keep|valid|sel)\w*\s*\]"
    r"|\[[^\]\[]*(>|<|==|!=)[^\]\[]*\]"  # x[labels != -100]
)
_OP_TYPES = ("nonzero", "masked_select", "unique", "argwhere")


def data_sized(text: str) -> bool:
    """A line of Python that makes a tensor whose size depends on values."""
    return bool(_DATA_SIZED.search(text))


def _lines(evidence: Evidence, cause: Cause) -> list[str]:
    return [*cause.sources, evidence.context.call_site]


def _data_sized(evidence: Evidence, cause: Cause) -> str:
    for loc in _lines(evidence, cause):
        if loc and _DATA_SIZED.search(source_text(loc)):
            return loc
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
        return Recognized((merge(CauseKind.DYNAMIC_SHAPE, summary, [pending[i]]),), frozenset({i}))
    return NOTHING


RECOGNIZER = Recognizer("dynamic_shape", _recognize)
