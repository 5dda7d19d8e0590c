"""Gradient accumulation in lazy mode: the optimizer steps every k syncs, so the second update
(k syncs after the first) is the first graph to read the optimizer state the first update made.
Against the first update's graph, its new inputs are that state: expected `state_init`, not a
`parameter_added` to fix. Real torch_xla 2.9 captures (fixtures/torch_xla/corpus: an LSTM and a
GPT-NeoX, each accumulating over 3 micro-batches)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report

_CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


@pytest.mark.parametrize("name", ["hn_lstm_accum_loader", "hx_neox_accum_trainer"])
def test_the_second_update_reads_the_state_the_first_made(name: str) -> None:
    report = capture_report(_CAPTURES / name)
    (second,) = [r for r in report.recompiles if r.step == 5]
    assert [str(c.kind) for c in second.causes] == ["state_init"], second.causes
    assert all(c.info for c in second.causes)
    assert "step 2" in second.causes[0].summary  # the first update, which made it
    # the first update itself stays the accumulation's expected pair of graphs
    (first,) = [r for r in report.recompiles if r.step == 2]
    assert [str(c.kind) for c in first.causes] == ["conditional_work"]
