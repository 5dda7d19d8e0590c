"""pytest plugin: fail a test when the code under test compiles more XLA graphs than allowed, and
say why (how it counts and explains: docs/watch.md, "pytest: `xla_graph_budget`")."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

import pytest

__all__ = ["compile_count", "graph_budget", "xla_graph_budget"]

_session = ExitStack()


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--xla-explain",
        action="store_true",
        default=False,
        help="xlagraph: capture the session so that xla_graph_budget failures name each extra graph's "
        "cause and line",
    )


def pytest_configure(config: Any) -> None:
    if not config.getoption("--xla-explain", default=False):
        return
    from xlagraph.capture._hook import active_capture, capture

    if active_capture() is not None:
        return
    folder = tempfile.mkdtemp(prefix="xlagraph-pytest-")  # kept: the failures name it for `report`
    _session.enter_context(capture(folder))


def pytest_unconfigure(config: Any) -> None:
    _session.close()


def compile_count() -> int:
    """How many graphs torch_xla compiled in this process so far."""
    import torch_xla.debug.metrics as met

    data = met.metric_data("CompileTime")
    return int(data[0]) if data else 0


@contextmanager
def graph_budget(max_graphs: int, sync: bool = True) -> Iterator[None]:
    """Fail the current test when the block compiles more than `max_graphs` graphs."""
    if max_graphs < 0:
        raise ValueError(f"max_graphs must be 0 or more, got {max_graphs}")
    from xlagraph.capture._hook import active_capture

    before = compile_count()
    started = active_capture()
    yield
    if sync:
        import torch_xla

        torch_xla.sync()
    compiled = compile_count() - before
    if compiled > max_graphs:
        head = f"{compiled} XLA graph(s) compiled inside xla_graph_budget, at most {max_graphs} allowed"
        pytest.fail(f"{head}{_why(started)}", pytrace=False)


def _why(started: tuple[str, int] | None) -> str:
    """Each graph the block compiled, with its cause and line (`report`'s words), from the capture."""
    from xlagraph.capture._hook import active_capture

    now = active_capture()
    if started is None or now is None or now[0] != started[0]:
        return ": run `pytest --xla-explain` (or under XLAGRAPH_CAPTURE=DIR) to see why"
    try:
        from xlagraph.capture.reader import read_process
        from xlagraph.render.watch import event_line
        from xlagraph.report.build import build_report
        from xlagraph.report.watch import WatchEvent

        report = build_report(read_process(started[0]))
        # the block's graphs: compiled in the journal steps it ran (a step's record is written at its sync)
        first = _user_step(report, started[1])
        inside = [r for r in (*report.recompiles, *report.first_compiles) if r.step >= first]
    except Exception as e:  # (never hide the failure behind our own)
        return f" (xlagraph could not explain it: {type(e).__name__}: {e})"
    if not inside:
        return f" (capture {started[0]} holds no graph of this block)"
    lines = [event_line(WatchEvent("recompile", report.process, r.step, r, {}, r.expected)) for r in inside]
    return ":\n" + "\n".join(f"  - {line.split(': ', 1)[1]}" for line in lines) + f"\n  capture: {started[0]}"


def _user_step(report: Any, journal_step: int) -> int:
    """The report's step that the journal's step `journal_step` became (steps are joined)."""
    return min(journal_step, max(report.steps - 1, 0))


@pytest.fixture
def xla_graph_budget() -> Callable[..., AbstractContextManager[None]]:
    """`with xla_graph_budget(max_graphs=N): ...` fails the test past N compiles, naming why."""
    return graph_budget
