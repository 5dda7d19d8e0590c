"""A compiled module's nn.ModuleList that grows mid-run (issue 37, held_out_50's ibis): dynamo's guard
on `len(self._modules['blocks']._modules)` is said as the length of `self.blocks`, found where the
list grows (`.append(` outside `__init__`), and every graph the retrace compiles on that step (the
bridge's full sync holding the new block's init, the forward, the lazy backward and update) is one
`parameter_added` at that line with the layers' fix: no `output_added`, `output_removed` or
`structure` beside it. Real torch_xla 2.9 captures: the corpus script and
fixtures/torch_xla/grown_modules (a conv stack under Adam, grown by a trainer method)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.causes import CauseKind
from xlagraph.diagnose.guards import explain_guard

CORPUS = FIXTURES / "torch_xla" / "corpus"
HERE = FIXTURES / "torch_xla" / "grown_modules"
_PREFIX = "fixtures/torch_xla/corpus/"
_IBIS = "h50_ibis_openxla_grow_blocks"


def test_a_module_list_length_guard_names_the_attribute() -> None:
    g = explain_guard("0/0: len(self._modules['blocks']._modules) != 1")
    assert (g.kind, g.subject, g.before) == ("sequence_length", "self.blocks", "1")
    assert "`self.blocks`" in g.phrase
    # a plain list argument is untouched
    assert explain_guard("0/0: len(L['targets']) == 3").subject == "targets"


def _cases() -> list[tuple[object, str, str]]:
    ibis = script_line(f"{_PREFIX}scripts/{_IBIS}.py", "self.blocks.append(block)").replace(_PREFIX, "")
    stack = script_line(
        "fixtures/torch_xla/grown_modules/stage_stack_adam.py", "self.net.stages.append(stage)"
    )
    return [
        (CORPUS / "captures" / _IBIS, ibis, "self.blocks"),
        (next((HERE / "stage_stack_adam_capture").iterdir()), stack, "self.stages"),
    ]


@pytest.mark.parametrize(("folder", "grown", "name"), _cases(), ids=["ibis", "stage_stack_adam"])
def test_every_graph_of_the_growth_step_is_the_new_module_where_the_list_grows(
    folder: object, grown: str, name: str
) -> None:
    report = capture_report(folder)  # type: ignore[arg-type]
    retraced = [r for r in report.recompiles if r.dynamo == "0/1"]
    assert len(retraced) >= 3, [r.variant for r in report.recompiles]
    for r in retraced:
        live = [c for c in r.causes if not c.info]
        assert [c.kind for c in live] == [CauseKind.PARAMETER_ADDED], (r.variant, r.kinds)
        (cause,) = live
        assert cause.sources[0] == grown, cause.sources
        assert f"`{name}`" in cause.summary
        assert cause.fix_id == "parameter_added.layer"
        assert not r.expected
