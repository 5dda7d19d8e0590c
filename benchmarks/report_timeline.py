"""A timeline of one `xlagraph report`: when each process reads each graph and explains each
recompile, in wall seconds from the start and its own CPU seconds, and a summary per process
(where a two-worker report waits: the parent's reads before the fork, the workers' ends).

```bash
python benchmarks/report_timeline.py benchmarks/_data/report_capture          # the summary
python benchmarks/report_timeline.py benchmarks/_data/report_capture --events # and every event
```

It runs the report of this checkout in this process (as `python -m cli.main report SRC` would,
`XLAGRAPH_WORKERS` as set), with stamps around `Modules._load`, `Modules.preload`,
`explain_in_processes` and each recompile (`XLAGRAPH_WORKERS=1`: the one-process loop's). The
answers are not changed; the stamps cost a few microseconds each. CPU seconds of a forked
worker count from its fork.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

_T0 = time.perf_counter()
_LOG = ""


def _stamp(what: str) -> None:
    with open(_LOG, "a") as f:  # appends of one line: the processes' lines do not mix
        wall, cpu, thread = time.perf_counter() - _T0, time.process_time(), time.thread_time()
        f.write(f"{os.getpid()} {wall:.3f} {cpu:.3f} {thread:.3f} {what}\n")


def _wrap(owner: object, name: str, before: object, after: object) -> None:
    original = getattr(owner, name)

    def wrapped(*args, **kwargs):  # type: ignore[no-untyped-def]
        _stamp(before(*args))  # type: ignore[operator]
        try:
            return original(*args, **kwargs)
        finally:
            _stamp(after(*args))  # type: ignore[operator]

    setattr(owner, name, wrapped)


def _instrument() -> None:
    import xlagraph.report.build as build
    import xlagraph.report.explain_workers as workers
    import xlagraph.report.modules as modules

    _wrap(modules.Modules, "_load", lambda _, h: f"read {h[:12]}", lambda _, h: f"read-end {h[:12]}")
    _wrap(
        modules.Modules,
        "preload",
        lambda _, hashes, *a: f"preload {len(dict.fromkeys(hashes))}",
        lambda *_: "preload-end",
    )
    for module in (workers, build):  # the workers' and the one-process loop's
        _wrap(
            module,
            "explain_recompile",
            lambda t, *_: f"recompile {t.index}",
            lambda t, *_: f"recompile-end {t.index}",
        )
    _wrap(build, "explain_in_processes", lambda *_: "workers", lambda *_: "workers-end")


def _summary(lines: list[str], parent: int) -> list[str]:
    by_pid: dict[int, list[tuple[float, float, float, str]]] = {}
    for line in lines:
        pid, wall, cpu, thread, what = line.split(" ", 4)
        by_pid.setdefault(int(pid), []).append((float(wall), float(cpu), float(thread), what))
    out = ["process        from     to   CPU s  reads  recompiles  read CPU s  recompile CPU s"]
    for pid, events in sorted(by_pid.items(), key=lambda kv: kv[1][0][0]):
        reads = _spans(events, "read", 2)  # its thread's CPU: the parent reads on two
        recompiles = _spans(events, "recompile", 1)
        name = "parent" if pid == parent else f"worker {pid}"
        out.append(
            f"{name:<13} {events[0][0]:6.2f} {events[-1][0]:6.2f} {events[-1][1]:7.2f} {len(reads):6d} "
            f"{len(recompiles):11d} {sum(reads):11.2f} {sum(recompiles):16.2f}"
        )
    for wall, cpu, _, what in by_pid.get(parent, []):
        if what.startswith(("preload", "workers")):
            out.append(f"parent: {what} at {wall:.2f} s wall, {cpu:.2f} CPU-s")
    # The cores left idle: what a run with every core busy from start to end would have spent
    # (under load, other processes' time counts as idle here too).
    cores = len(os.sched_getaffinity(0))
    end, cpu = max(e[-1][0] for e in by_pid.values()), sum(e[-1][1] for e in by_pid.values())
    out.append(f"idle: {cores} cores x {end:.2f} s - {cpu:.2f} CPU-s = {cores * end - cpu:.2f} core-s")
    out.append("(a recompile's CPU includes the graphs it reads; CPU of a worker counts from its fork)")
    return out


def _spans(events: list[tuple[float, float, float, str]], kind: str, clock: int) -> list[float]:
    """CPU seconds (`clock` 1: the process's, 2: the thread's) of each `kind ... kind-end` pair of
    one process (one name is never in two at once)."""
    started: dict[str, tuple[float, ...]] = {}
    spans = []
    for event in events:
        head, _, rest = event[3].partition(" ")
        if head == kind:
            started[rest] = event
        elif head == f"{kind}-end" and rest in started:
            spans.append(event[clock] - started.pop(rest)[clock])
    return spans


def main() -> None:
    global _LOG
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("--events", action="store_true", help="print every event, not only the summary")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))  # this checkout's cli/, as bench_versions.py runs it
    with tempfile.NamedTemporaryFile("r", suffix=".timeline", delete=False) as f:
        _LOG = f.name
    _instrument()
    from cli import _common
    from cli.main import main as run_cli

    _common.ONE_COMMAND_PROCESS = True  # as `entry()` marks the installed command's process

    sys.argv = ["xlagraph", "report", args.source]
    _stamp("start")
    stdout, code = sys.stdout, 0
    with open(os.devnull, "w") as sys.stdout:  # the report itself is not what is timed here
        try:
            run_cli()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    sys.stdout = stdout
    _stamp("end")
    lines = Path(_LOG).read_text().splitlines()
    os.unlink(_LOG)
    print(f"xlagraph from {Path(sys.modules['xlagraph'].__file__).parent}; report exit status {code}")
    if args.events:
        print(*lines, sep="\n")
    print(*_summary(lines, os.getpid()), sep="\n")


if __name__ == "__main__":
    main()
