"""held_out_34's miss, end to end on its real capture (tuned on after its first blind run,
recorded in the corpus README): the line a user must change."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


def _script(name: str, line: int) -> str:
    return f"scripts/{name}.py:{line}"


def test_updates_called_through_a_loop_over_the_functions_are_cited_at_its_header() -> None:
    """Two state updates run by `for update in (update_ema, update_scale) if ema_first else
    (update_scale, update_ema): update()`: the swapped-order recompile cites that header first,
    as the steady state's turns do (was the two update bodies only: a graph of step 1 has no
    frames on its live tensors, so only the source can name the loop that calls them)."""
    name = "h34_rec_compiled_ema_swap_kd_zero"
    report = capture_report(CAPTURES / name)
    recompile = next(r for r in report.recompiles if r.step == 1)
    (cause,) = [c for c in recompile.causes if not c.info]
    assert str(cause.kind) == "output_permutation"
    assert list(cause.sources[:3]) == [_script(name, 54), _script(name, 47), _script(name, 51)]
    assert report.steady_turns is not None
    assert report.steady_turns.line == _script(name, 54)
