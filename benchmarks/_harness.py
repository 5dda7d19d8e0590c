"""Shared helpers for the benchmark scripts, plus the measurement worker.

The benchmark drivers (``bench_parse.py``, ``bench_diff.py``) never parse anything themselves: every
measurement runs in a fresh interpreter started as ``python benchmarks/_harness.py <command> ...`` so that

* each measurement gets its own peak RSS (read by the parent with ``os.wait4``, i.e. the child's
  ``ru_maxrss`` — the same figure ``resource.getrusage`` gives, but per child instead of the running maximum
  over all children that ``RUSAGE_CHILDREN`` reports), and
* the parsers under test never share a heap, caches or imported modules.

The worker prints exactly one JSON object on its last stdout line.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
DATA_DIR = BENCH_DIR / "_data"
RESULTS_DIR = BENCH_DIR / "_results"
MANIFEST = DATA_DIR / "manifest.json"
DEFAULT_SIZES = ("30k", "120k", "600k")

# An instruction line inside a computation: optional ROOT, a (possibly %-prefixed) name, " = ".
# Computation headers and the HloModule line are not indented, instruction lines are.
_INSTRUCTION_RE = re.compile(r"^[ \t]+(?:ROOT[ \t]+)?%?[A-Za-z_][\w.\-]*[ \t]*=[ \t]", re.MULTILINE)

EXIT_IMPORT_ERROR = 3
EXIT_RUN_ERROR = 4


# ----------------------------------------------------------------------------------------------------
# Files


def count_instructions(text: str) -> int:
    """Number of instruction lines in all computations of an HLO module text (one instruction per line)."""
    return len(_INSTRUCTION_RE.findall(text))


def data_path(size: str, variant: str) -> Path:
    """``variant`` is ``a``, ``b`` or ``a.noshapes``."""
    return DATA_DIR / f"transformer_{size}_{variant}.hlo"


def parse_sizes(spec: str) -> list[str]:
    sizes = [s.strip().lower() for s in spec.split(",") if s.strip()]
    for size in sizes:
        if not re.fullmatch(r"\d+k", size):
            raise argparse.ArgumentTypeError(f"size {size!r} is not of the form <N>k, e.g. 30k")
    return sizes


def size_target(size: str) -> int:
    return int(size[:-1]) * 1000


def load_manifest() -> dict[str, Any]:
    if MANIFEST.exists():
        return json.loads(MANIFEST.read_text())
    return {}


def environment() -> dict[str, Any]:
    """Where the figures come from; the load average flags runs disturbed by other processes."""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


def write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")


# ----------------------------------------------------------------------------------------------------
# Running a measurement in a fresh process


@dataclass
class ChildResult:
    returncode: int
    wall_s: float
    peak_rss_mb: float
    payload: dict[str, Any]
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and "error" not in self.payload


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # Measure the working tree, not an installed copy of xlagraph.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PJRT_DEVICE", "CPU")
    return env


def run_worker(args: Sequence[str], timeout_s: float) -> ChildResult:
    """Run ``_harness.py <args>`` in a fresh interpreter; return its JSON payload, wall time and peak RSS."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=_child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    try:
        # Drain the pipes in threads so a chatty child cannot block; reap with wait4 to get its own rusage.
        out: list[str] = []
        err: list[str] = []
        readers = [
            threading.Thread(target=lambda: out.append(proc.stdout.read())),  # type: ignore[union-attr]
            threading.Thread(target=lambda: err.append(proc.stderr.read())),  # type: ignore[union-attr]
        ]
        for reader in readers:
            reader.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        for reader in readers:
            reader.join()
    finally:
        timer.cancel()
    stdout, stderr = "".join(out), "".join(err)
    payload = _last_json_line(stdout)
    if proc.returncode < 0 and "error" not in payload:
        payload = {
            "error": "killed",
            "message": f"killed by signal {-proc.returncode} (timeout {timeout_s:g} s?)",
        }
    # ru_maxrss is in KiB on Linux.
    return ChildResult(proc.returncode, wall, usage.ru_maxrss / 1024, payload, stderr)


def _last_json_line(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    return {"error": "no-output", "message": "worker printed no JSON result"}


def child_error(result: ChildResult) -> str:
    """A one-line description of why a measurement failed."""
    message = str(result.payload.get("message", "")).strip()
    if not message:
        tail = result.stderr.strip().splitlines()
        message = tail[-1] if tail else f"exit code {result.returncode}"
    return f"{result.payload.get('error', 'error')}: {message.splitlines()[0][:300]}"


# ----------------------------------------------------------------------------------------------------
# Formatting


def fmt_s(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def fmt_x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def fmt_mb(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def fmt_rss(peak_mb: float | None, before_mb: float | None) -> str:
    """Peak RSS, and in brackets its growth over the RSS just before the timed work started."""
    if peak_mb is None:
        return "—"
    return fmt_mb(peak_mb) if before_mb is None else f"{peak_mb:,.0f} (+{peak_mb - before_mb:,.0f})"


def check(ok: bool | None) -> str:
    return "—" if ok is None else ("✅" if ok else "❌")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------
# Worker side (runs in the child process)


def _rss_now_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _time_calls(call: Callable[[], object], repeat: int) -> list[float]:
    """Time ``call`` ``repeat`` times; each result is dropped (untimed) before the next call."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
        del result
    return times


def _summary(times: list[float], rss_before_mb: float, **extra: Any) -> dict[str, Any]:
    return {
        "times_s": times,
        "best_s": min(times),
        "median_s": statistics.median(times),
        "rss_before_mb": rss_before_mb,
        **extra,
    }


class _Unavailable(Exception):
    """The code under test cannot be imported (yet)."""


def _import(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise _Unavailable(f"cannot import {module}.{name}: {type(exc).__name__}: {exc}") from exc


def _worker_xla_parse(paths: list[str], repeat: int) -> dict[str, Any]:
    """Parse every file with XLA's C++ parser; one timing = parsing all files (texts already in memory)."""
    parse = _import("jaxlib._hlo", "hlo_module_from_text")
    texts = [Path(p).read_text() for p in paths]
    rss_before = _rss_now_mb()

    def parse_all() -> list[object]:
        return [parse(text) for text in texts]

    return _summary(_time_calls(parse_all, repeat), rss_before)


def _worker_xlagraph_parse(paths: list[str], repeat: int) -> dict[str, Any]:
    parse_hlo = _import("xlagraph.parse.hlo", "parse_hlo")

    texts = [(Path(p).read_text(), p) for p in paths]
    rss_before = _rss_now_mb()

    def parse_all() -> list[object]:
        return [parse_hlo(text, path) for text, path in texts]

    return _summary(_time_calls(parse_all, repeat), rss_before)


def _worker_core_parse(paths: list[str], repeat: int) -> dict[str, Any]:
    """The compiled reader alone (``xlagraph._core.parse_only``): parsing and checking, no Python IR."""
    parse_only = _import("xlagraph._core", "parse_only")
    texts = [Path(p).read_text() for p in paths]
    rss_before = _rss_now_mb()
    return _summary(_time_calls(lambda: [parse_only(t) for t in texts], repeat), rss_before)


def _worker_core_summary(paths: list[str], repeat: int) -> dict[str, Any]:
    """The compiled core reading and canonicalizing, no Python IR (``xlagraph._core.summarize_hlo``,
    what ``xlagraph graphs`` needs of an HLO module)."""
    summarize = _import("xlagraph._core", "summarize_hlo")
    texts = [Path(p).read_text() for p in paths]
    rss_before = _rss_now_mb()
    return _summary(_time_calls(lambda: [summarize(t, 0) for t in texts], repeat), rss_before)


def _worker_xla_once(paths: list[str], repeat: int) -> dict[str, Any]:
    """What a user waits for when XLA reads the files: this whole process (the parent times it)."""
    parse = _import("jaxlib._hlo", "hlo_module_from_text")
    start = time.perf_counter()
    for p in paths:
        parse(Path(p).read_text())
    return _summary([time.perf_counter() - start], _rss_now_mb())


def _worker_cli(argv: list[str]) -> dict[str, Any]:
    """Run the ``xlagraph`` command in this process, its output to /dev/null (the parent times it)."""
    main = _import("xlagraph.cli.main", "main")
    start = time.perf_counter()
    sys.argv = ["xlagraph", *argv]
    with open(os.devnull, "w") as sink:
        saved, sys.stdout = sys.stdout, sink
        try:
            main()
        except SystemExit as exc:
            code = exc.code
        else:
            code = 0
        finally:
            sys.stdout = saved
    return _summary([time.perf_counter() - start], _rss_now_mb(), exit_code=code)


def _worker_diff(paths: list[str], repeat: int) -> dict[str, Any]:
    diff_files = _import("xlagraph.diff", "diff_files")

    path_a, path_b = paths
    rss_before = _rss_now_mb()
    return _summary(_time_calls(lambda: diff_files(path_a, path_b), repeat), rss_before)


_WORKERS: dict[str, Callable[[list[str], int], dict[str, Any]]] = {
    "xla-parse": _worker_xla_parse,
    "xla-once": _worker_xla_once,
    "xlagraph-parse": _worker_xlagraph_parse,
    "core-parse": _worker_core_parse,
    "core-summary": _worker_core_summary,
    "diff": _worker_diff,
    "cli-graphs": lambda paths, _: _worker_cli(["graphs", *paths]),
    "cli-diff": lambda paths, _: _worker_cli(["diff", *paths]),
}


def worker_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="measurement worker (started by the bench scripts)")
    parser.add_argument("command", choices=sorted(_WORKERS))
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        payload = _WORKERS[args.command](args.paths, max(1, args.repeat))
        code = 0
    except _Unavailable as exc:
        payload, code = {"error": "import", "message": str(exc)}, EXIT_IMPORT_ERROR
    except Exception as exc:  # the parser under test failed; report it instead of a traceback only
        payload, code = {"error": "run", "message": f"{type(exc).__name__}: {exc}"}, EXIT_RUN_ERROR
    print(json.dumps(payload))
    return code


if __name__ == "__main__":
    sys.exit(worker_main())
