"""A report explained by several worker processes is the report one process gives, byte for
byte (`XLAGRAPH_WORKERS`): on real captures with several recompiles, text and JSON."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from xlagraph.cli.main import xlagraph

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "fixtures" / "torch_xla" / "corpus" / "captures"
# Real captures with several recompiles each (the largest first).
# The module (the package exports a function of the same name).
build = importlib.import_module("xlagraph.report.build")
SOURCES = [
    CAPTURES / "h7_megatronbert_packed_doc_pool",
    *sorted(p.parent for p in CAPTURES.glob("h10_*/journal.jsonl"))[:3],
]


def _report(path: Path, workers: int, monkeypatch: pytest.MonkeyPatch, *flags: str) -> str:
    monkeypatch.setenv("XLAGRAPH_WORKERS", str(workers))
    result = CliRunner().invoke(xlagraph, ["report", str(path), *flags])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return f"{result.exit_code}\n{result.stdout}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_workers_give_the_single_process_report(source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for flags in (("--json",), ()):
        one = _report(source, 1, monkeypatch, *flags)
        assert _report(source, 3, monkeypatch, *flags) == one


def test_workers_run_in_other_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parallel path is the one taken (not the single loop) when workers are asked for."""
    called: list[int] = []
    original = build.explain_in_processes

    def spy(targets, args, workers):  # type: ignore[no-untyped-def]
        called.append(workers)
        return original(targets, args, workers)

    monkeypatch.setattr(build, "explain_in_processes", spy)
    _report(SOURCES[0], 3, monkeypatch, "--json")
    assert called == [3]


def test_workers_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLAGRAPH_WORKERS", "5")
    assert build.report_workers() == 5
    monkeypatch.delenv("XLAGRAPH_WORKERS")
    assert build.report_workers() >= 1


def test_graphs_read_before_the_fork_change_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before forking, the report reads the graphs each later chunk's first recompile compares
    (`Modules.preload`, on two threads): the workers' report is still the single process's,
    also where some of those graphs cannot be read (a damaged dump is named as it was)."""
    import shutil

    source = tmp_path / "capture"
    shutil.copytree(SOURCES[0], source)
    dumps = sorted((source / "hlo").iterdir())
    assert len(dumps) >= 5
    for dump in dumps[2::2]:
        dump.write_bytes(dump.read_bytes()[:200])  # truncated: unreadable
    preloaded: list[list[str]] = []
    original = build.Modules.preload

    def spy(self, hashes, threads=2):  # type: ignore[no-untyped-def]
        preloaded.append(list(hashes))
        return original(self, hashes, threads)

    monkeypatch.setattr(build.Modules, "preload", spy)
    for flags in (("--json",), ()):
        one = _report(source, 1, monkeypatch, *flags)
        assert "could not be read" in one
        assert _report(source, 3, monkeypatch, *flags) == one
    assert preloaded and all(preloaded)  # the parallel reports read ahead


def test_ended_pools_are_joined_before_the_pools_exit_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that made a report exits without CPython 3.11's race ("Exception ignored ... Bad
    file descriptor": the pools' exit hook wakes a manager thread closing its pipe): the pools'
    manager threads are kept, and joined from a hook that runs before that one."""
    import threading
    from concurrent.futures import process

    workers = importlib.import_module("xlagraph.report.explain_workers")
    hooks = [getattr(h, "func", h) for h in threading._threading_atexits]  # type: ignore[attr-defined]
    # threading runs these last registered first
    assert hooks.index(workers._join_ended) > hooks.index(process._python_exit)
    _report(SOURCES[1], 2, monkeypatch)
    assert workers._ENDED and all(isinstance(t, threading.Thread) for t in workers._ENDED)
    workers._join_ended()
    assert not workers._ENDED
