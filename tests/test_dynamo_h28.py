"""held_out_28's torch.compile(openxla) misses, end to end on its real captures (tuned on after its
first blind run, recorded in docs/accuracy.md), and the rules they exercise in diagnose/dynamo_join/ and
report/explain.py."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.diagnose.dynamo_join.branches import _tested_inline
from xlagraph.report.model import GuardFailure, Recompile

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


def _recompiles(name: str) -> tuple[Recompile, ...]:
    return capture_report(CAPTURES / name).recompiles


def _numbers(lines: tuple[str, ...]) -> list[int]:
    return [int(x.rsplit(":", 1)[1]) for x in lines]


def test_a_coin_a_conditional_expression_tests_is_named_at_its_line() -> None:
    """Scheduled teacher forcing: `use_tf = random.random() < ratio` (:42) is passed to the compiled
    forward, which feeds `targets[:, t] if teacher_forcing else step_logits.argmax(-1)` (:27). Dynamo
    guards on the bool and traces each case; the other case's graph reads another input and runs
    other work. One cause at the conditional expression, the coin's line beside it, a fix that passes
    the coin as a tensor and picks on the device: not a parameter added beside a parameter removed."""
    name = "h28_speech_openxla_teacher_forcing_coin"
    r = next(r for r in _recompiles(name) if not r.expected)
    (cause,) = r.causes
    assert (str(cause.kind), cause.fix_id, cause.info) == (
        "conditional_work",
        "conditional_work.python_argument",
        False,
    )
    assert _numbers(cause.sources)[:2] == [27, 42]
    assert "torch.where" in cause.hint and "bool tensor" in cause.hint


def test_the_bridge_s_input_graph_is_warm_up_whichever_graph_it_is_closest_to() -> None:
    """A clean openxla loop whose bridge input graph of step 1 (E) is closer to the step's lazy
    graph (D) than to the bridge's full sync of step 0 (B): it is the same warm-up as where it is
    compared with B (h24_housing_openxla_droplast_clean), `state_init.bridge_sync`, not work synced
    at a point of its own."""
    recompiles = _recompiles("h28_shop_openxla_clean")
    scored = [r for r in recompiles if not r.first_of_program]
    assert [r.step for r in scored] == [1, 1]
    assert {(c.fix_id, c.info) for r in scored for c in r.causes} == {("state_init.bridge_sync", True)}


def _guard(source: str, phrase: str = "Python argument `flag` changed") -> GuardFailure:
    return GuardFailure(kind="python_scalar", phrase=phrase, text="", at="t.py:3", source=source)


@pytest.mark.parametrize(
    ("source", "tested"),
    [
        ("tok = gold if flag else pred  # GUILTY", "... if flag else ..."),
        ("y = x * 2 if self.flag and k else x", "... if self.flag and k else ..."),
        ("y = x if other else z", ""),  # the guarded value is not what the line tests
        ("y = x * flag", ""),  # no branch: a value used as data
        ("y = x  # a if flag else b", ""),  # in a comment
    ],
)
def test_a_conditional_expression_on_the_guarded_value(source: str, tested: str) -> None:
    assert _tested_inline(_guard(source)) == tested


def test_the_guard_s_fix_is_the_branch_s_where_its_line_branches_on_the_value() -> None:
    """Dynamo's half says the same fix as the graph's: a bool the line branches on, passed as a
    tensor, would be a data-dependent branch (a graph break), not data."""
    report = capture_report(CAPTURES / "h28_speech_openxla_teacher_forcing_coin")
    (event,) = [e for e in report.dynamo.events if e.kind == "recompile"]
    assert "torch.where" in event.fix and "torch.tensor(value" not in event.fix
    assert event.guards[0].fix == event.fix
