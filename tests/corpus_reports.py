"""The report of a corpus capture as `xlagraph report --json` gives it, read once per test process:
the tests on fixtures/torch_xla/corpus/captures share it."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from tests.conftest import FIXTURES
from xlagraph.render.report_json import report_to_json
from xlagraph.report import build_report, load_runs

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


@cache
def corpus_report(name: str) -> dict[str, Any]:
    folder = CAPTURES / name
    if not folder.is_dir():
        pytest.fail(f"missing {folder}: run fixtures/torch_xla/corpus/generate.py")
    (log,) = load_runs(str(folder))
    return report_to_json((build_report(log),))
