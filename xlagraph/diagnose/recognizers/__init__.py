"""The recognizers, one module per pattern, and the order they run in.

Order matters: a layout change that only follows other changes is folded first; patterns that
explain a whole cascade come next (a sharding or parallelism
change explains collectives, shard shapes and scaling constants; a graph break explains a
graph cut anywhere), then the warm-up and every-k-steps patterns that explain whole regions,
then the patterns of one input or one value; `unknown` then words what nothing explained. Last (`FINAL`),
over everything found, named and raw alike: `permutation` folds a reordering into the change it
follows from, `periodic_site` cites the `if ... % k:` line
that calls a helper, `collective_site` cites where the user's code issued collectives whose
metadata names torch_xla alone, and `grouping` makes one cause of what repeats.

The contract. A recognizer is one module exporting `RECOGNIZER = Recognizer(name, recognize)`;
`recognize(evidence, pending)` is pure: it reads the two graphs and the run (`Evidence`) and the
causes still pending (the raw differences, or in `FINAL` everything found), and returns
`Recognized(causes, consumed, rest)`: the causes it names, the indices of the pending causes they
explain (dropped from the list), and pieces it split off and leaves to later recognizers; `NOTHING`
when the pattern is absent. It names a `CauseKind`, takes its hint from `diagnose/fixes.py` and its
lines from the causes it consumes. `donation.py` is the smallest: it renames the `attribute`
differences that are all `input_output_alias` and gives them the donation fix. Shared helpers, one
file per concern: `_causes` (merge, rename), `_source` (the user's code around a line),
`_periodic` (work done every k steps), `_assignments` (where a value was made), `_dataflow`
(walks over a graph), `_statements` (the `with` and `for` around a line, from the syntax tree of
the stored file), `_deciding_loop` (which user loop decides an order, from whichever lines: one
rule for every cause that cites such a loop), `_precision` (where precision is switched), `_clip`
(what a global-norm clip looks like), `_beside_work` (differences that follow from work one
graph does only), `_late_module` (a module made mid-run and used once it exists), `_guarded_calls`
(the calls of a helper made under an `if` where others are not), `_user_flow` (a traced loop's
trip count, hooks registered, tensors kept in or made from Python lists), `_dropout_mode` (random
work toggled by train/eval, a dropout probability set, or the user's own random tensors),
`_hook_steps` (work that runs from the step a hook is registered on), `_permutation_site` (the
lines that decided an order of inputs or outputs), `_wrappers` (names bound to a wrapper of a user
function: `step_fn = torch_xla.compile(train_step)`).
"""

from __future__ import annotations

import os
import warnings

from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.evidence import Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers import (
    annotation,
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
    returned_output,
    returned_state,
    scalar_ops,
    shape_constants,
    sharding,
    shared_scalar,
    shared_work,
    shifted_stage,
    size_echo,
    special_scalar,
    state_init,
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
