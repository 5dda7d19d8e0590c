"""An argument that is None on some calls and a tensor on others under torch.compile (issue 37:
held_out_26's tagger, an optional mask passed only when a batch is padded): dynamo's guard
`mask is None` is said in the user's words, and the XLA graphs of the retrace are the code the
`if mask is not None:` picks, one cause at that `if` with the fix proved by
fixtures/torch_xla/fixes/conditional_work.optional_argument (tests/test_fixes_work.py)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.guards import explain_guard, fix_for


@pytest.mark.parametrize(
    ("text", "subject", "assumed"),
    [
        ("0/0: mask is None  # if mask is not None:  # m.py:22 in forward", "mask", "is None"),
        ("L['bias'] is not None", "bias", "is not None"),
    ],
)
def test_a_none_guard_is_an_optional_argument(text: str, subject: str, assumed: str) -> None:
    g = explain_guard(text)
    assert (g.kind, g.subject) == ("optional_argument", subject), g
    assert g.phrase.endswith(f"assumed it {assumed})"), g.phrase
    assert fix_for(g.kind) == fix("conditional_work.optional_argument")


def test_the_retrace_s_graphs_are_the_code_the_if_picks() -> None:
    captures = FIXTURES / "torch_xla" / "corpus" / "captures"
    report = capture_report(captures / "h26_ner_openxla_mask_when_padded")
    script = "scripts/h26_ner_openxla_mask_when_padded.py"
    tofix = [r for r in report.recompiles if not r.expected]
    assert tofix, report.recompiles
    for r in tofix:
        live = [c for c in r.causes if not c.info]
        assert [c.fix_id for c in live] == ["conditional_work.optional_argument"], (r.variant, live)
        assert live[0].sources[0] == f"{script}:22", live[0].sources
