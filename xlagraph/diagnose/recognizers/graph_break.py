"""`graph_break`: a sync inside the step (`.item()`, `.cpu()`, `print(t)`, Python control flow
on a tensor) cut the step's graph, so one graph is a part of the other.

Evidence: the capture says the new graph's sync (or the baseline's) was implicit, and cites its
line; two graphs cut at the same line differ for another reason. Without a capture, the graphs'
own shape: one is wholly contained in the other and lacks most of its outputs (a step cut short),
not one or two extra outputs (those stay `output_added`: tensors kept alive).
"""

from __future__ import annotations

from xlagraph.diagnose.causes import INTERFACE, Cause, CauseKind
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS, NOTHING, Context, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._host_branch import taken_branch
from xlagraph.diagnose.recognizers._host_if import host_decided_if
from xlagraph.diagnose.recognizers._source import source_text, user_files
from xlagraph.diagnose.recognizers.dynamic_shape import data_sized

__all__ = ["RECOGNIZER"]

_CUT = (
    *INTERFACE,
    CauseKind.OUTPUT_PERMUTATION,
    CauseKind.PARAMETER_PERMUTATION,
    CauseKind.STRUCTURE,
    CauseKind.CONSTANT_VALUE,
    CauseKind.ATTRIBUTE,
    CauseKind.DTYPE,  # an output slot of the cut graph paired with another tensor
    CauseKind.LAYOUT,
)


_MIN_CUT_OUTPUTS = 3


def _cut_short(evidence: Evidence, pending: tuple[Cause, ...]) -> str:
    """ "this graph" / "the baseline graph" when that side is a part of the other cut short."""
    nl, nr = len(evidence.left.entry.outputs), len(evidence.right.entry.outputs)
    if all(not c.right for c in pending) and nr * 2 <= nl and nl - nr >= _MIN_CUT_OUTPUTS:
        return "this graph"
    if all(not c.left for c in pending) and nl * 2 <= nr and nr - nl >= _MIN_CUT_OUTPUTS:
        return "the baseline graph"
    return ""


def _cut_collectives(cause: Cause, which: str) -> bool:
    """Collectives only the whole graph has: the cut-short graph ends before them (a rank's
    `.item()` before backward leaves the gradients' all-reduce to the rest of the step)."""
    if cause.kind is not CauseKind.COLLECTIVE:
        return False
    return not cause.right if which == "this graph" else not cause.left


def _what_differs(causes: list[Cause]) -> str:
    """`3 inputs and 8 outputs differ`, from the interface changes of the folded causes."""
    inputs = sum(1 for c in causes for ch in c.changes if ch.what == "input")
    outputs = sum(1 for c in causes for ch in c.changes if ch.what == "output")
    if not (inputs or outputs):
        return f"{len(causes)} difference(s) follow from it"
    return f"{inputs} input(s) and {outputs} output(s) of the other graph differ"


def _unrecorded(ctx: Context) -> str:
    """Where the cut is when no line says it: a capture that recorded no Python frame of the
    user's at that sync is not told to capture."""
    if ctx.known:
        return "a line the capture recorded no Python frame of yours for"
    return "a line the dump does not record (XLAGRAPH_CAPTURE records it)"


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    ctx = evidence.context
    this, base = ctx.trigger in IMPLICIT_TRIGGERS, ctx.baseline_trigger in IMPLICIT_TRIGGERS
    if this and base and ctx.call_site == ctx.baseline_call_site:
        return NOTHING  # two cuts at the same line: what differs between them is another cause
    if this:
        trigger, line, which = ctx.trigger, ctx.call_site, "this graph"
    elif base and ctx.call_site == ctx.baseline_call_site:  # else another program, not a cut
        trigger, line, which = ctx.baseline_trigger, ctx.baseline_call_site, "the baseline graph"
    elif not ctx.trigger and (which := _cut_short(evidence, pending)):
        trigger = "implicit"
        line = ctx.call_site if which == "this graph" else ctx.baseline_call_site
    elif ctx.call_site == ctx.baseline_call_site and bool(ctx.cut_before) != bool(ctx.baseline_cut_before):
        return _rest_of_cut(ctx, pending)
    else:
        return NOTHING
    cut = [i for i, c in enumerate(pending) if c.kind in _CUT or _cut_collectives(c, which)]
    if not cut:
        return NOTHING
    label = "an implicit sync" if trigger == "implicit" else f"a {trigger} sync"
    differs = _what_differs([pending[i] for i in cut])
    summary = (
        f"{label} inside the step cut the graph: {which} ends at "
        + (line or _unrecorded(ctx))
        + f" instead of at the step's sync ({differs})"
    )
    kind = CauseKind.GRAPH_BREAK
    if line and data_sized(source_text(line)):  # x[mask], nonzero: the op syncs to learn its size
        kind = CauseKind.DYNAMIC_SHAPE
        summary = (
            f"a data-dependent size (boolean mask, nonzero, unique, masked_select) at {line} makes "
            f"torch_xla sync to learn it, which cuts the step there ({differs})"
        )
    cut_here = which == "this graph" and kind is CauseKind.GRAPH_BREAK
    branch = _in_host_branch(evidence, line) if cut_here else ()
    if branch:
        said = f"syncs at {line} and cuts the step there ({differs})"
        return Recognized((taken_branch(branch, line, said, [pending[i] for i in cut]),), frozenset(cut))
    # The differing ops' own lines are where the rest of the step is, not where it was cut.
    cause = merge(kind, summary, [pending[i] for i in cut], sources=(line,) if line else ())
    return Recognized((cause,), frozenset(cut))


def _in_host_branch(evidence: Evidence, line: str) -> tuple[str, ...]:
    """(the `if`, the lines that read its test on the host) when the cut at `line` is in the block
    of an `if` a device value read on the host decides (`if loss.item() > limit:` around a
    fallback op that syncs): the cut only runs on the steps that take the branch; else ()."""
    return host_decided_if(line, user_files(evidence)) if line else ()


def _rest_of_cut(ctx: Context, pending: tuple[Cause, ...]) -> Recognized:
    """Two syncs at one line, one of them in a step an implicit sync cut earlier (a checkpoint's
    transfer every k steps, a value read on the host): that graph holds only the rest of its step,
    the other the whole step."""
    cut = [i for i, c in enumerate(pending) if c.kind in _CUT]
    if not cut:
        return NOTHING
    line = ctx.cut_before or ctx.baseline_cut_before
    which = "this graph" if ctx.cut_before else "the baseline graph"
    summary = (
        f"an implicit sync at {line} cut the step earlier: {which} holds only the rest of its step "
        f"({_what_differs([pending[i] for i in cut])})"
    )
    cause = merge(CauseKind.GRAPH_BREAK, summary, [pending[i] for i in cut], sources=(line,))
    return Recognized((cause,), frozenset(cut))


RECOGNIZER = Recognizer("graph_break", _recognize)
