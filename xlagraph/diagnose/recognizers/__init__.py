"""The recognizers, one module per pattern, and the order they run in (the contract, why this
order and the shared helpers: docs/development.md, "A recognizer")."""

from __future__ import annotations

import os
import warnings
from importlib import import_module

from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.evidence import Evidence, Recognized, Recognizer
from xlagraph.errors import XlagraphWarning

__all__ = ["FINAL", "ORDER", "recognize"]


def _in_order(*modules: str) -> tuple[Recognizer, ...]:
    """The `RECOGNIZER` of each module of this package, in the order named: each pattern's module
    is named once, where it runs."""
    return tuple(import_module(f"{__name__}.{m}").RECOGNIZER for m in modules)


ORDER: tuple[Recognizer, ...] = _in_order(
    "layout",
    "checkpointing",
    "collective_scale",
    "sharding",
    "fsdp_layout",
    "parallelism",
    "graph_break",
    # After graph_break: the step's own sync after a cut inside a host-decided branch holds the
    # rest of the branch's step.
    "branch_rest",
    "random_skip",
    "dtype",
    # Before state_init: new inputs shaped like the ones kept are the copies of an unrolled loop's
    # body (more micro-batches), not state made on this step.
    "unrolled_loop",
    "state_init",
    # After state_init: on the step that creates optimizer state, that state's update work is
    # state_init's, and what is left of the bridge's warm-up is the loss it synced on step 0.
    "bridge_sync",
    "materialized",
    "returned_state",
    # Before the source-driven and scalar recognizers: the matcher paired a sum's terms that
    # changed places by content, and what reads them differs because of that alone.
    "term_order",
    # Before the scalar recognizers: one more term of a sum re-pairs the sum's chain and the
    # scalars along it around the new input's term; those follow from the input.
    "summed_term",
    # Before conditional_work: outputs returned one per item of an argument, and the work done for
    # them only, are what the host passed, not a branch the step took.
    "returned_items",
    "conditional_work",
    "replaced_branch",
    "shape_constants",
    "branches",
    "growing_list",
    "annotation",
    "donation",
    "python_sizes",
    "python_int",
    "scalar_ops",
    "special_scalar",
    "trainable",
    "pending_init",
    # After state_init and pending_init: state of an update rule the user wrote, made on this step.
    "own_update",
    # Before kept_alive: what a traced function returns is no tensor kept alive.
    "returned_output",
    "kept_alive",
    "shared_scalar",
    "new_input",
    "dynamic_shape",
    "input_shape",
    "unknown",
)
FINAL: tuple[Recognizer, ...] = _in_order(
    # First: a scalar input that a data-made count merged with an equal one (named removed by
    # new_input) is the count's, before a renumbering of the inputs is folded into the removal.
    "dynamic_shape_fold",
    "fused_cascade",
    # A user's scalar that, on the step state is made, rides on the state's equal new input.
    "shared_state_fold",
    # Work an added output shares with the others, implemented another way by XLA once compiled.
    "shared_work",
    # A tuple of other shapes (what a remat policy saves) is its elements': the cause of those.
    "tuple_carry",
    "weight_shapes",
    "kept_view",
    "hook_keep",
    "replaced_input",
    "size_echo",
    # A concatenation of another number of pieces: a count, folded into the size it changes.
    "piece_count",
    # A stage's window moved over look-alike blocks: the block gained, the one lost and the work
    # matched across them are one cause, before its inputs' renumbering is folded into it.
    "shifted_stage",
    "permutation",
    # An optimizer's update work, named above, where the user assigns a new optimizer mid-run.
    "optimizer_swap",
    # The same for weights tied mid-run (`head.weight = embed.weight` in the loop).
    "weight_tie",
    "periodic_site",
    # Optimizer work named every-k above, cited where a trainable-set switch is: the switch's.
    "trainable_fold",
    "config_site",
    # A collective cause that still cites library code alone (no config line either), cited where
    # the user's code issued its collectives.
    "collective_site",
    "grouping",
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
