"""held_out_45's ember and ibis (issue 37), on real torch_xla 2.9 captures, and one capture of each
pattern on another model (fixtures/torch_xla/returned_items/generate.py).

ember: a length that reaches a position table's full size drops the slice and its backward (torch_xla's
unselect: a pad of the gradient into zeros); that region follows from the length: one
`parameter_shape` cause, no `structure` beside it. ibis: a torch_xla.compile'd step that returns one
tensor per item of an argument (the panels due this call) has outputs that follow what the host
passes; look-alike outputs trade places: one `output_added`/`output_removed` cause, cited at the
comprehension and where the host sets the argument, with the returned-outputs fix; no branch at the
helper's `if`, no input dropped for the scalars that work reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.report.model import RunReport

CORPUS = FIXTURES / "torch_xla" / "corpus"
HERE = FIXTURES / "torch_xla" / "returned_items"
_PREFIX = "fixtures/torch_xla/corpus/"
_OUTPUTS = ("output_added", "output_removed")


def _corpus_line(name: str, text: str) -> str:
    return script_line(f"{_PREFIX}scripts/{name}.py", text).replace(_PREFIX, "")


def _here_line(name: str, text: str) -> str:
    return script_line(f"fixtures/torch_xla/returned_items/{name}.py", text)


@pytest.mark.parametrize(
    ("folder", "step", "lines"),
    [
        (
            CORPUS / "captures" / "h45_ember_compiled_seq_curriculum",
            5,
            (_corpus_line("h45_ember_compiled_seq_curriculum", "seq = make_batch(cfg, length, gen)"),),
        ),
        (
            HERE / "window_full_table_capture",
            4,
            (_here_line("window_full_table", "n = window_size(i)"),),
        ),
    ],
)
def test_a_length_reaching_the_table_size_is_one_shape_cause(
    folder: Path, step: int, lines: tuple[str, ...]
) -> None:
    report = capture_report(folder)
    (recompile,) = [r for r in report.recompiles if r.step == step]
    (cause,) = recompile.causes  # no structure at torch/_decomp/decompositions.py beside it
    assert str(cause.kind) == "parameter_shape"
    assert cause.fix_id == "parameter_shape.sequence", cause
    assert set(lines) <= set(cause.sources), cause.sources
    assert not any(ch.what == "opcode" for ch in cause.changes), cause.changes


def _returned_per_item(report: RunReport, steps: set[int], comprehension: str, argument: str) -> None:
    scored = [r for r in report.recompiles if r.step in steps]
    assert len(scored) == len(steps)
    for recompile in scored:
        (cause,) = recompile.causes  # no conditional_work, no parameter_removed/added beside it
        assert str(cause.kind) in _OUTPUTS, cause
        assert cause.fix_id == "output_added.returned", cause
        assert cause.sources[:2] == (comprehension, argument), cause.sources


def test_ibis_panels_due_are_returned_outputs_at_the_comprehension() -> None:
    name = "h45_ibis_eager_panel_refresh"
    report = capture_report(CORPUS / "captures" / name)
    _returned_per_item(
        report,
        {3, 4},
        _corpus_line(name, "panels = {name: panel_value"),
        _corpus_line(name, "due = [name for name"),
    )


def test_metrics_due_are_returned_outputs_at_the_comprehension() -> None:
    name = "metrics_due"
    report = capture_report(HERE / f"{name}_capture")
    # C trades B's `mae` for `worst` (same count and shapes), D drops both, E adds both
    _returned_per_item(
        report,
        {3, 5, 6},
        _here_line(name, "metrics = {name: metric"),
        _here_line(name, "wanted = [name for name"),
    )
