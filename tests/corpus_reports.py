"""The report of a stored capture, read once per test process: a corpus capture as `xlagraph report
--json` gives it (the tests on fixtures/torch_xla/corpus/captures share it), or any capture folder
of one run as a `RunReport`; and a script's line by its text."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from xlagraph.render.report_json import report_to_json
from xlagraph.report import build_report, load_runs
from xlagraph.report.model import RunReport

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


@cache
def corpus_report(name: str) -> dict[str, Any]:
    folder = CAPTURES / name
    if not folder.is_dir():
        pytest.fail(f"missing {folder}: run fixtures/torch_xla/corpus/generate.py")
    (log,) = load_runs(str(folder))
    return report_to_json((build_report(log),))


@cache
def capture_report(folder: Path) -> RunReport:
    """The report of a capture folder holding one run (the `generate.py` beside it makes it)."""
    if not folder.is_dir():
        pytest.fail(f"missing {folder}: run the generate.py of {folder.parent}")
    (log,) = load_runs(str(folder))
    return build_report(log)


def script_line(script: str, text: str) -> str:
    """`file:line` of the first line of `script` (repository-relative) that contains `text`."""
    lines = (FIXTURES.parent / script).read_text(encoding="utf-8").splitlines()
    return f"{script}:{next(i for i, line in enumerate(lines, 1) if text in line)}"
