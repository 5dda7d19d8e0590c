"""A step that an implicit sync cut earlier (`xm.save` of a checkpoint every k steps transfers the
weights mid-step) ends in a graph that holds only the rest of that step. Against the whole step's
graph at the same sync line, its missing outputs and changed updates follow from the cut: one
`graph_break` at the cut's line, not `output_removed` (a kept-alive tensor) beside `structure`; and the
steady state's turns say so. Real torch_xla 2.9 capture (fixtures/torch_xla/corpus)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line

_NAME = "hz_bloom_ckpt_mid_step"
_CAPTURE = FIXTURES / "torch_xla" / "corpus" / "captures" / _NAME


def test_the_rest_of_a_cut_step_is_the_cut() -> None:
    report = capture_report(_CAPTURE)
    save = script_line(f"fixtures/torch_xla/corpus/scripts/{_NAME}.py", "xm.save(").replace(
        "fixtures/torch_xla/corpus/", ""
    )
    fixed = [r for r in report.recompiles if not r.expected]
    assert len(fixed) == 2
    for recompile in fixed:
        kinds = [str(c.kind) for c in recompile.causes if not c.info]
        assert kinds == ["graph_break"], (recompile.variant, kinds)
        assert any(save in s for c in recompile.causes for s in c.sources), recompile.causes
    turns = report.steady_turns
    assert turns is not None and turns.kinds == ("graph_break",), turns
    assert save in turns.line


def test_the_rest_after_a_host_read_of_the_gradient_norm() -> None:
    """Another shape: a GRU tagger reads its gradient norm every fourth step after the backward;
    the update left for the step's sync is a graph of its own, named at the read."""
    here = FIXTURES / "torch_xla" / "cut_rest"
    report = capture_report(here / "grad_check_every_k_capture")
    read = script_line("fixtures/torch_xla/cut_rest/grad_check_every_k.py", "if norm.item() > 100.0")
    fixed = [r for r in report.recompiles if not r.expected]
    assert len(fixed) == 2
    for recompile in fixed:
        kinds = [str(c.kind) for c in recompile.causes if not c.info]
        assert kinds == ["graph_break"], (recompile.variant, kinds)
        assert any(read in s for c in recompile.causes for s in c.sources), recompile.causes
    turns = report.steady_turns
    assert turns is not None and turns.kinds == ("graph_break",) and read in turns.line, turns
