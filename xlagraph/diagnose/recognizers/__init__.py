"""The recognizers, one module per pattern, and the order they run in (the contract, why this
order and the shared helpers: docs/development.md, "A recognizer")."""

from __future__ import annotations

import os
import warnings

from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.evidence import Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers import (
    annotation,
    branch_rest,
    branches,
    bridge_sync,
    checkpointing,
    collective_scale,
    collective_site,
    conditional_work,
    config_site,
    donation,
    dtype,
    dynamic_shape,
    dynamic_shape_fold,
    fsdp_layout,
    fused_cascade,
    graph_break,
    grouping,
    growing_list,
    hook_keep,
    input_shape,
    kept_alive,
    kept_view,
    layout,
    materialized,
    new_input,
    optimizer_swap,
    own_update,
    parallelism,
    pending_init,
    periodic_site,
    permutation,
    piece_count,
    python_int,
    python_sizes,
    random_skip,
    replaced_branch,
    replaced_input,
    returned_items,
    returned_output,
    returned_state,
    scalar_ops,
    shape_constants,
    sharding,
    shared_scalar,
    shared_state_fold,
    shared_work,
    shifted_stage,
    size_echo,
    special_scalar,
    state_init,
    summed_term,
    term_order,
    trainable,
    trainable_fold,
    tuple_carry,
    unknown,
    unrolled_loop,
    weight_shapes,
    weight_tie,
)
from xlagraph.errors import XlagraphWarning

__all__ = ["FINAL", "ORDER", "recognize"]

ORDER: tuple[Recognizer, ...] = (
    layout.RECOGNIZER,
    checkpointing.RECOGNIZER,
    collective_scale.RECOGNIZER,
    sharding.RECOGNIZER,
    fsdp_layout.RECOGNIZER,
    parallelism.RECOGNIZER,
    graph_break.RECOGNIZER,
    # After graph_break: the step's own sync after a cut inside a host-decided branch holds the
    # rest of the branch's step.
    branch_rest.RECOGNIZER,
    random_skip.RECOGNIZER,
    dtype.RECOGNIZER,
    # Before state_init: new inputs shaped like the ones kept are the copies of an unrolled loop's
    # body (more micro-batches), not state made on this step.
    unrolled_loop.RECOGNIZER,
    state_init.RECOGNIZER,
    # After state_init: on the step that creates optimizer state, that state's update work is
    # state_init's, and what is left of the bridge's warm-up is the loss it synced on step 0.
    bridge_sync.RECOGNIZER,
    materialized.RECOGNIZER,
    returned_state.RECOGNIZER,
    # Before the source-driven and scalar recognizers: the matcher paired a sum's terms that
    # changed places by content, and what reads them differs because of that alone.
    term_order.RECOGNIZER,
    # Before the scalar recognizers: one more term of a sum re-pairs the sum's chain and the
    # scalars along it around the new input's term; those follow from the input.
    summed_term.RECOGNIZER,
    # Before conditional_work: outputs returned one per item of an argument, and the work done for
    # them only, are what the host passed, not a branch the step took.
    returned_items.RECOGNIZER,
    conditional_work.RECOGNIZER,
    replaced_branch.RECOGNIZER,
    shape_constants.RECOGNIZER,
    branches.RECOGNIZER,
    growing_list.RECOGNIZER,
    annotation.RECOGNIZER,
    donation.RECOGNIZER,
    python_sizes.RECOGNIZER,
    python_int.RECOGNIZER,
    scalar_ops.RECOGNIZER,
    special_scalar.RECOGNIZER,
    trainable.RECOGNIZER,
    pending_init.RECOGNIZER,
    # After state_init and pending_init: state of an update rule the user wrote, made on this step.
    own_update.RECOGNIZER,
    # Before kept_alive: what a traced function returns is no tensor kept alive.
    returned_output.RECOGNIZER,
    kept_alive.RECOGNIZER,
    shared_scalar.RECOGNIZER,
    new_input.RECOGNIZER,
    dynamic_shape.RECOGNIZER,
    input_shape.RECOGNIZER,
    unknown.RECOGNIZER,
)
FINAL: tuple[Recognizer, ...] = (
    # First: a scalar input that a data-made count merged with an equal one (named removed by
    # new_input) is the count's, before a renumbering of the inputs is folded into the removal.
    dynamic_shape_fold.RECOGNIZER,
    fused_cascade.RECOGNIZER,
    # A user's scalar that, on the step state is made, rides on the state's equal new input.
    shared_state_fold.RECOGNIZER,
    # Work an added output shares with the others, implemented another way by XLA once compiled.
    shared_work.RECOGNIZER,
    # A tuple of other shapes (what a remat policy saves) is its elements': the cause of those.
    tuple_carry.RECOGNIZER,
    weight_shapes.RECOGNIZER,
    kept_view.RECOGNIZER,
    hook_keep.RECOGNIZER,
    replaced_input.RECOGNIZER,
    size_echo.RECOGNIZER,
    # A concatenation of another number of pieces: a count, folded into the size it changes.
    piece_count.RECOGNIZER,
    # A stage's window moved over look-alike blocks: the block gained, the one lost and the work
    # matched across them are one cause, before its inputs' renumbering is folded into it.
    shifted_stage.RECOGNIZER,
    permutation.RECOGNIZER,
    # An optimizer's update work, named above, where the user assigns a new optimizer mid-run.
    optimizer_swap.RECOGNIZER,
    # The same for weights tied mid-run (`head.weight = embed.weight` in the loop).
    weight_tie.RECOGNIZER,
    periodic_site.RECOGNIZER,
    # Optimizer work named every-k above, cited where a trainable-set switch is: the switch's.
    trainable_fold.RECOGNIZER,
    config_site.RECOGNIZER,
    # A collective cause that still cites library code alone (no config line either), cited where
    # the user's code issued its collectives.
    collective_site.RECOGNIZER,
    grouping.RECOGNIZER,
)


def recognize(evidence: Evidence, raw: tuple[Cause, ...]) -> tuple[Cause, ...]:
    """Run every recognizer in `ORDER`; raw differences none consumed are kept as they are."""
    found: list[Cause] = []
    pending = raw
    for recognizer in ORDER:
        result = _guarded(recognizer, evidence, pending)
        if result is None:
            continue
        found += result.causes
        pending = tuple(c for i, c in enumerate(pending) if i not in result.consumed) + result.rest
    everything = tuple(found) + pending
    for final in FINAL:
        result = _guarded(final, evidence, everything)
        if result is None:
            continue
        everything = result.causes + tuple(c for i, c in enumerate(everything) if i not in result.consumed)
    return everything


def _guarded(recognizer: Recognizer, evidence: Evidence, causes: tuple[Cause, ...]) -> Recognized | None:
    """A recognizer that fails (a bug of ours) names nothing: the causes it was given stay as they
    are, and a warning says which one failed, so one pattern's bug never costs the whole report.
    XLAGRAPH_STRICT=1 (the test suite) raises instead."""
    try:
        return recognizer.recognize(evidence, causes)
    except Exception as e:
        if os.environ.get("XLAGRAPH_STRICT", "") not in ("", "0"):
            raise
        warnings.warn(
            f"recognizer {recognizer.name} failed ({type(e).__name__}: {e}); its pattern is not named "
            "here (a bug in xlagraph: please report it)",
            XlagraphWarning,
            stacklevel=2,
        )
        return None
