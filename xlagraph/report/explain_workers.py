"""A report's recompiles explained in forked worker processes (`XLAGRAPH_WORKERS`): every answer is
the one a single process gives, in the same order.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext

from xlagraph.diagnose.frames import SourceText, current_sources, reading_sources
from xlagraph.progress import shown, step
from xlagraph.report.baseline import graphs_read, prepare_baseline
from xlagraph.report.explain import ReportRun, earlier_graphs, explain_recompile
from xlagraph.report.model import Recompile
from xlagraph.runlog import Sync


def report_workers() -> int:
    """Processes that explain a report's recompiles: `XLAGRAPH_WORKERS`, else one per core this
    process may run on."""
    raw = os.environ.get("XLAGRAPH_WORKERS", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# The manager threads of pools ended without waiting. CPython 3.11's exit hook for process pools
# (`concurrent.futures.process._python_exit`) wakes each manager thread through a pipe that the
# thread may be closing at that moment ("Exception ignored ... OSError: Bad file descriptor" at the
# exit of a process that made reports). Joined first, from a hook registered after that one
# (threading runs them last registered first), each has closed its pipe, and the wake is skipped.
_ENDED: list[threading.Thread] = []


def _join_ended() -> None:
    while _ENDED:
        _ENDED.pop().join()


if hasattr(threading, "_register_atexit"):
    threading._register_atexit(_join_ended)  # type: ignore[attr-defined]


# What the forked workers explain: set in the parent just before the fork, read by the children.
_JOB: tuple[list[Sync], ReportRun, SourceText | None] | None = None


def _explain_one(k: int) -> Recompile:
    assert _JOB is not None
    targets, run, text = _JOB
    with shown(None), reading_sources(text) if text is not None else nullcontext():
        return explain_recompile(targets[k], run)


def explain_in_processes(targets: list[Sync], run: ReportRun, workers: int) -> tuple[Recompile, ...]:
    """`explain_recompile` of each target in forked processes: each recompile's diffs depend only on the
    run's graphs and facts, which the children inherit, so every answer is the one a single
    process gives (in target order). Neighbouring recompiles go to one worker (contiguous
    chunks): they compare the same earlier graphs, which it then parses once."""
    global _JOB
    _JOB = (targets, run, current_sources())
    chunk = -(-len(targets) // workers)
    # A chunk's first recompile would read its own graph and the earlier ones it compares with
    # before any work of its worker's could share them: read here, on two threads, they are the
    # workers' from the fork (and the first worker's when it gets there).
    first, modules = run.first, run.modules
    if modules is not None:
        heads = range(chunk, len(targets), chunk)
        modules.preload(
            [h for k in heads for h in graphs_read(targets[k], earlier_graphs(targets[k], first))]
        )
        # A chunk's first recompile compares with the last graphs of the chunk before: both
        # workers would build and refine those (the core's per-graph work, kept on each graph,
        # ~2% of the report's CPU). Done here once, with that recompile's correspondences,
        # which its worker then finds kept (and the longer of the two workers loses most).
        for k in heads:
            prepare_baseline(targets[k], earlier_graphs(targets[k], first), modules)
    try:
        context = multiprocessing.get_context("fork")
        pool = ProcessPoolExecutor(workers, mp_context=context)
        try:
            explained = []
            for k, r in enumerate(pool.map(_explain_one, range(len(targets)), chunksize=chunk), 1):
                step("recompile", k, len(targets))
                explained.append(r)
        finally:
            # Every answer is in: the report goes on while the workers exit (each frees a heap
            # of parsed graphs, which the kernel takes a while to unmap); the pool's own thread
            # reaps them. A worker that failed has raised above, and the pool is ended the same.
            manager = getattr(pool, "_executor_manager_thread", None)
            pool.shutdown(wait=False, cancel_futures=True)
            if isinstance(manager, threading.Thread):
                _ENDED[:] = [t for t in _ENDED if t.is_alive()] + [manager]
    finally:
        _JOB = None
    return tuple(explained)
