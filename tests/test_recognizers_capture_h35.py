"""held_out_35's misses, end to end on their real captures (tuned on after its first blind run,
recorded in the corpus README): the cause a user must fix and the line they must change."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


def _script(name: str, line: int) -> str:
    return f"scripts/{name}.py:{line}"


def test_a_smoothing_annealed_to_zero_is_cited_where_it_is_passed_not_at_a_periodic_print() -> None:
    """Label smoothing annealed to exactly 0.0 at step 4 drops its work from the graph; the loop
    also prints `loss.item()` under `if step % 4 == 3:`. A print of values the step computed makes
    no work, so the cause cites the `F.cross_entropy(..., label_smoothing=smoothing_at(step))`
    call, not the print (was :48, the print, taken as the every-k block that switches the work)."""
    name = "h35_loans_lazy_smoothing_to_zero"
    report = capture_report(CAPTURES / name)
    recompile = next(r for r in report.recompiles if r.step == 4)
    (att,) = [a for a, c in zip(recompile.attribution, recompile.causes, strict=True) if not c.info]
    assert att.kind == "conditional_work"
    assert _script(name, 48) not in att.lines
    assert att.lines[0] in (_script(name, 21), _script(name, 43))


def test_a_concatenation_of_another_number_of_pieces_is_the_list_length_not_structure() -> None:
    """Dynamo's guard `len(crops) == 2` fails at step 6; the graph synced first for the retrace
    (the labels `repeat(n_crops)`, a concatenation of n copies) differs only in that
    concatenation's operand count. That is the count changing a size: `parameter_shape`, cited
    where `n_crops` is computed (was `structure`, at the repeat's line only). Step 7's graphs fold
    the same concatenation into their batch-size cause instead of a `structure` beside it."""
    name = "h35_plankton_openxla_multicrop"
    report = capture_report(CAPTURES / name)
    first = next(r for r in report.recompiles if r.step == 6)
    (cause,) = [c for c in first.causes if not c.info]
    assert str(cause.kind) == "parameter_shape"
    assert cause.fix_id == "parameter_shape.piece_count"
    assert "joins 3 piece(s) where it joined 2" in cause.summary
    assert _script(name, 35) in first.attribution[0].lines
    later = [r for r in report.recompiles if r.step == 7]
    assert later
    for r in later:
        assert "structure" not in r.kinds, (r.variant, r.kinds)


def test_a_print_of_computed_values_reports_only_and_one_that_computes_does_not(tmp_path: Path) -> None:
    """The rule behind the first test, on each shape of statement: printing or logging values
    the step computed (`.item()`, formatting, the clock) makes no graph work; a print whose
    argument runs the model, or any other statement, may."""
    from xlagraph.diagnose.recognizers._periodic import reports_only

    script = tmp_path / "train.py"
    script.write_text(
        "def main(model, x, logger):\n"
        "    for step in range(8):\n"
        "        loss = model(x).sum()\n"
        "        if step % 4 == 3:\n"
        "            print(f'step {step}: loss {loss.item():.4f} {time.time() - t0:.1f}s')\n"
        "            logger.info('loss %f',\n"
        "                        float(loss.item()))\n"
        "            print(model(x).sum().item())\n"
        "            smooth = 0.0\n"
    )
    assert reports_only(f"{script}:5")
    assert reports_only(f"{script}:7")  # a continuation line of the call
    assert not reports_only(f"{script}:8")
    assert not reports_only(f"{script}:9")
