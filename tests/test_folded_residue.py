"""Differences that follow from a named cause are part of it (issue 37), on real captures of
held_out_20 (fixtures/torch_xla/corpus): each rule is general, each capture one real instance."""

from __future__ import annotations

from pathlib import Path

from xlagraph.api import report

CORPUS = Path(__file__).resolve().parents[1] / "fixtures/torch_xla/corpus/captures"


def _report(name: str):  # type: ignore[no-untyped-def]
    return report(str(CORPUS / name))


def test_a_host_decided_loop_exit_folds_the_work_of_its_iterations() -> None:
    # The chunk loop breaks on `.item()` one chunk early at step 3: the chunk encoder's ops (lines of
    # the module the loop calls, outside the loop) and the iteration's slice index go with the exit.
    r = _report("h20_hierdoc_chunk_loop_item_break")
    (recompile,) = [x for x in r.recompiles if x.step == 3]
    assert recompile.kinds == ("conditional_work",)
    assert recompile.causes[0].fix_id == "conditional_work.host_iterations"


def test_a_library_scalar_computed_from_the_length_follows_the_shape() -> None:
    # transformers' sliding-window mask: a scalar input at length 8 is a baked 1 at length 16.
    r = _report("h20_gemma3_seqlen_curriculum_epochs")
    (recompile,) = r.recompiles
    assert recompile.kinds == ("parameter_shape",)


def test_another_modes_graph_is_expected_and_so_are_its_turns() -> None:
    # A no-grad scoring pass at each epoch's end: torch.compile recompiles `forward` for grad mode
    # (expected once), and the XLA graph it compiled is that mode's code, not a cause to fix.
    r = _report("h20_twotower_openxla_padded_tail_clean")
    assert all(x.expected for x in r.recompiles)
    mode = [x for x in r.recompiles if x.dynamo]
    assert mode and all(x.causes[0].fix_id == "own_graph" for x in mode)
    turns = r.processes[0].steady_turns
    assert turns is not None and turns.expected
