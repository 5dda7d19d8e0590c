"""Progress reaches a status line only where a command installed one, and never with --quiet."""

from __future__ import annotations

import io
from pathlib import Path

from click.testing import CliRunner
from xlagraph.cli.main import xlagraph

from xlagraph import progress

DATA = Path(__file__).resolve().parent / "data"


class _Line:
    def __init__(self, stream: io.StringIO | None = None) -> None:
        self.stream = stream
        self.said: list[str] = []

    def __enter__(self) -> _Line:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def set(self, phase: str) -> None:
        self.said.append(phase)


def test_steps_go_to_the_installed_sink_only() -> None:
    said: list[str] = []
    assert list(progress.counted("rank", "ab")) == ["a", "b"]  # no sink: nothing, no error
    with progress.shown(said.append):
        assert list(progress.counted("recompile", [10, 20, 30])) == [10, 20, 30]
    progress.step("rank", 1, 2)
    assert said == ["recompile 1/3", "recompile 2/3", "recompile 3/3"]


def test_quiet_status_line_says_nothing() -> None:
    with progress.status_line(_Line, quiet=True) as line:
        progress.step("rank", 412, 1024)
    assert line.said == [] and isinstance(line.stream, io.StringIO)
    with progress.status_line(_Line, quiet=False) as line:
        progress.step("rank", 412, 1024)
    assert line.said == ["rank 412/1024"]


def test_quiet_is_accepted_and_stderr_stays_empty_when_piped() -> None:
    runner = CliRunner()
    diff = ["diff", str(DATA / "scale_0.hlo"), str(DATA / "scale_1.hlo")]
    for args in (diff, ["report", str(DATA / "train.hlo.txt")]):
        for quiet in ([], ["--quiet"]):
            result = runner.invoke(xlagraph, [*args, *quiet])
            assert result.exit_code in (0, 1), result.output
            assert result.stderr == ""
