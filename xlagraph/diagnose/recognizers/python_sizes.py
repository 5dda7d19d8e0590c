"""`parameter_shape`: ops changed size while no input did. The sizes came from Python ints taken
from the data's shape (`torch.ones(batch, seq_len)`, `arange(seq_len)` for a mask or positions,
as transformers' mask helpers build them), so the graph changes with the batch or the sequence
length exactly as an input's shape would. Only a size: an op parameter that changed too (slice
bounds) is a Python int used to index, which `python_int` names."""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind, Change
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._dataflow import upstream
from xlagraph.diagnose.recognizers.input_shape import (
    BATCH_HINT,
    GROWN_BATCH_HINT,
    SEQUENCE_HINT,
    with_helper_calls,
    with_loader_line,
)
from xlagraph.diagnose.shapes import shape_of
from xlagraph.match.shapes import dims, moved_dims

__all__ = ["RECOGNIZER"]


def _axes(old: str, new: str) -> set[int] | None:
    a, b = dims(old), dims(new)
    if a is None or b is None or len(a) != len(b) or a == b:
        return None
    return {k for k, (x, y) in enumerate(zip(a, b, strict=True)) if x != y}


def _of_rows(comp: CanonicalComputation, name: str) -> bool:
    """`name` is computed from a tensor the graph reads (not a scalar): a product of the batch's
    rows (`z1 @ z2.T`, pairwise distances), whose square size is the rows' count, not a length."""
    if name not in comp.computation.by_name:
        return False
    return any(
        q in comp.param_number and not shape_of(comp, q).endswith("[]")
        for q in upstream(comp.operands, [name])
    )


def _one_length(comp: CanonicalComputation, changes: list[Change]) -> bool:
    """Every op moves one size `t -> t'` only, and some op is a square `[t, t]` that moved on
    every axis, built from the size alone (a mask over a sequence's positions): by evidence, not
    squareness, since a `[B, B]` similarity of the batch's rows (a contrastive loss) is square too."""
    moves = {m for ch in changes for m in moved_dims(ch.old, ch.new)}
    square = any(
        (d := dims(ch.old)) is not None
        and len(d) == 2
        and len(set(d)) == 1
        and len(moved_dims(ch.old, ch.new)) == 1
        and _axes(ch.old, ch.new) == {0, 1}
        and not _of_rows(comp, ch.left)
        for ch in changes
    )
    return len(moves) == 1 and square


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    if any(c.kind is CauseKind.PARAMETER_SHAPE for c in pending):
        return NOTHING
    found: dict[int, set[int]] = {}
    for i, c in enumerate(pending):
        if not c.attribute_only("shape"):
            continue
        axes = [_axes(ch.old, ch.new) for ch in c.changes]
        if all(a is not None for a in axes):
            found[i] = set().union(*axes)  # type: ignore[arg-type]
    # Only when nothing else differs: ops paired across a reordering or new code change size too.
    if not found or len(found) != len(pending):
        return NOTHING
    # One root reason (a length or a batch size taken from the data), however many ops show it.
    changes = [ch for i in found for ch in pending[i].changes]
    axes = set().union(*found.values())
    per_op = list(found.values())  # one op per attribute cause
    shown = fmt_list([f"{ch.left} {ch.old} -> {ch.new}" for ch in changes], 2)
    if axes == {0}:
        grew = all((dims(ch.new) or [0])[0] > (dims(ch.old) or [0])[0] for ch in changes)
        what, hint = (
            ("the batch size grew", GROWN_BATCH_HINT) if grew else ("the batch dimension changed", BATCH_HINT)
        )
    elif _one_length(evidence.left.entry, changes):
        # Positions and a (t, t) mask built from one length (`arange(t)`, `full((t, t), -inf)`):
        # the batch builds no square of itself with no input carrying it, so axis 0 is a length.
        what, hint = (
            "one length changed (positions and a square mask built from it): a varying sequence "
            "length is typical",
            SEQUENCE_HINT,
        )
    elif not any(0 in a and a - {0} for a in per_op) and 2 * sum(1 for a in per_op if 0 not in a) >= len(
        per_op
    ):
        # Most ops change another axis (a sequence-first layout, as nn.MultiheadAttention's, has the
        # length in axis 0 of a few): a length.
        what, hint = "a non-batch dimension changed: a varying sequence length is typical", SEQUENCE_HINT
    else:
        what, hint = "the batch and other dimensions changed", BATCH_HINT
    summary = (
        f"{len(changes)} op(s) changed size ({shown}) with no input to carry it: sizes passed as "
        f"Python ints from the data's shape (a mask or positions built with torch.ones/arange); {what}"
    )
    named = merge(CauseKind.PARAMETER_SHAPE, summary, [pending[i] for i in found], hint=hint)
    named = with_loader_line(evidence, named) if hint is BATCH_HINT else named
    named = with_helper_calls(evidence, named) if hint is SEQUENCE_HINT else named
    return Recognized((named,), frozenset(found))


RECOGNIZER = Recognizer("python_sizes", _recognize)
