"""Start-up: `xlagraph --help` in fresh processes, against issue 10's goal (under 0.2 s).

    python benchmarks/bench_startup.py            # 11 runs, median and spread
    python benchmarks/bench_startup.py --runs 21

Runs the installed `xlagraph` entry point (the one a user types), after one warm-up run so the
page cache holds the interpreter and the packages, as it does for someone working at a terminal.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

GOAL_S = 0.2


def _one(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="measured runs (default 11)")
    args = parser.parse_args(argv)
    exe = shutil.which("xlagraph")
    cmd = [exe, "--help"] if exe else [sys.executable, "-m", "xlagraph.cli.main", "--help"]
    _one(cmd)  # warm-up
    times = sorted(_one(cmd) for _ in range(max(1, args.runs)))
    median = statistics.median(times)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average: {load} ({os.cpu_count()} CPUs)")
    print("| command | runs | best (s) | median (s) | worst (s) | goal | met |")
    print("|---|---|---|---|---|---|---|")
    met = "✅" if median < GOAL_S else "❌"
    print(
        f"| `xlagraph --help` | {len(times)} | {times[0]:.3f} | {median:.3f} | {times[-1]:.3f} "
        f"| < {GOAL_S} s | {met} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
