"""Issue 37 on real torch.compile(openxla) captures: heldout4's chat sampler (a clean control) holds
no recompile to fix."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line

COMPILED = FIXTURES / "torch_xla" / "compiled"
CHAT = "fixtures/torch_xla/compiled/heldout4/chat_kv_generate.py"


def test_a_sampled_token_read_on_the_host_is_no_cut_step_and_no_kept_tensor() -> None:
    """Only the generation steps sample (`else:` of `if i + 1 < len(prompt):`) and read the token
    with `int(tok)` (:64): that read's graph D has nothing of the prompt steps' graph C (`pos += 1`),
    so no step was cut (it was `graph_break`); E, the step's sync on those steps, returns the same
    sampling again (torch_xla keeps no result of a host read, `tok` and `probs` still hold it): the
    read's work, not a tensor kept alive by accident (it was `output_added`). Each graph compiles
    once and every later turn replays them, so nothing is left to fix."""
    report = capture_report(COMPILED / "heldout4_captures" / "chat_kv_generate" / "capture")
    assert [r.variant for r in report.recompiles if not r.expected] == []
    by = {r.variant: r for r in report.recompiles}
    read = script_line(CHAT, "tokens.append(int(tok))")
    assert [(str(c.kind), c.info) for c in by["D"].causes] == [("conditional_work", True)]
    assert by["D"].call_site == read and "graph_break" in by["D"].note
    (again,) = by["E"].causes
    assert (str(again.kind), again.info, again.fix_id) == ("conditional_work", True, "own_graph")
    assert again.sources[0] == read and script_line(CHAT, "torch.multinomial") in again.sources
    assert report.steady_turns is not None and report.steady_turns.expected

