"""A difference that follows from a named cause is folded into it (issue 37), on the corpus's
real torch_xla 2.9 captures (fixtures/torch_xla/corpus/captures, CPU device):

* h13_resmlp_bf16_autocast_later: a residual MLP (two look-alike blocks) switched to bf16
  autocast at step 3. In f32 each weight gradient is a view of its dot and each bias gradient a
  view of its reduction, whose bases torch_xla returns beside them; in bf16 they are converts,
  with no base. The 12 outputs fewer are those bases, whichever of a base or its look-alike view
  the output pairing happened to leave unpaired: no `output_removed` beside the switch.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from tests.conftest import FIXTURES
from xlagraph.render.report_json import report_to_json
from xlagraph.report import build_report, load_runs

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


@cache
def _report(name: str) -> dict[str, Any]:
    folder = CAPTURES / name
    if not folder.is_dir():
        pytest.fail(f"missing {folder}: run fixtures/torch_xla/corpus/generate.py")
    (log,) = load_runs(str(folder))
    return report_to_json((build_report(log),))


def _kinds(name: str, step: int) -> list[str]:
    (r,) = [r for r in _report(name)["recompiles"] if r["step"] == step]
    return [c["kind"] for c in r["causes"]]


def test_the_view_bases_of_the_other_precision_are_no_removed_outputs() -> None:
    assert _kinds("h13_resmlp_bf16_autocast_later", 3) == ["dtype"]
