"""held_out_37's rerank, end to end on its real capture (tuned on after its first blind run,
recorded in the corpus README): the line where the batch's size is decided."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"
NAME = "h37_rerank_lazy_more_candidates"


def _script(line: int) -> str:
    return f"scripts/{NAME}.py:{line}"


def test_a_width_sized_in_the_helper_the_step_loop_iterates_is_cited_there_first() -> None:
    """The candidate pool widens 8 -> 12 at step 4; lazy mode locates the item tensor's device data
    at the dict comprehension that moves the batch (:32), which decides no size. The step loop's
    `for batch in make_batches(gen, 10, phase["candidates"], 4):` made it, and the helper sizes
    the items by the width the call passes (`torch.randn(queries, candidates, 24)` :14): cited
    first, the transfer after it (was :32 alone)."""
    report = capture_report(CAPTURES / NAME)
    (recompile,) = [r for r in report.recompiles if r.step == 4]
    (att,) = [a for a, c in zip(recompile.attribution, recompile.causes, strict=True) if not c.info]
    assert att.kind == "parameter_shape"
    assert att.lines[:2] == (_script(14), _script(32))
    # the other tensors the helper makes are sized by constants the call passes: not cited
    assert _script(13) not in att.lines and _script(15) not in att.lines
