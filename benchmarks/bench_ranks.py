"""`xlagraph report` over a pod's worth of rank folders (issue 22: 1,024 ranks under 30 s, 2 GB).

The capture is simulated from a real one: `bench_report.py`'s capture (20 TinyGPT graphs of about
99K instructions, traced with torch_xla; `--source DIR` for another single-process capture) is
copied once per rank, as `xmp.spawn` would write it (`<host>-<pid>/` folders, each with its own
`meta.json` and journal saying `rank R of W`). Graph files are hard links, so 1,024 ranks cost
the disk one copy. A few ranks diverge: at the middle step they run another variant of the graph
(the next compile's file and hash), as a rank with a ragged batch would.

The folder is `_data/ranks_capture_<N>/` (git-ignored, reused unless `--force`); then `xlagraph
report DIR` runs in a fresh process (output to /dev/null), timed with its peak RSS. `--ranks N`
measures a smaller pod (the cost per rank is what the goal is about).

Output: a markdown table on stdout and `_results/ranks.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA_DIR, REPO_ROOT, RESULTS_DIR, environment, fmt_rss, fmt_s, markdown_table, write_json

SOURCE = DATA_DIR / "report_capture" / "vm-1"
GOAL_S = 30.0
GOAL_MB = 2048.0
DIVERGING = (5, 300, 777)  # ranks that run another graph at the middle step (those below N)


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def build(source: Path, folder: Path, ranks: int) -> dict[str, Any]:
    """One process folder per rank, from `source` (a single-process capture folder)."""
    records = [json.loads(line) for line in (source / "journal.jsonl").read_text().splitlines() if line]
    meta = json.loads((source / "meta.json").read_text())
    graphs = [r for r in records if r.get("k") == "graph"]
    middle = len(graphs) // 2
    start = time.perf_counter()
    for rank in range(ranks):
        proc = folder / f"vm-{10000 + rank}"
        for sub in ("hlo", "tensors"):
            if (source / sub).is_dir():
                (proc / sub).mkdir(parents=True, exist_ok=True)
                for f in (source / sub).iterdir():
                    if not (proc / sub / f.name).exists():
                        _link(f, proc / sub / f.name)
        out = []
        for r in records:
            r = dict(r)
            if r.get("k") == "rank":
                r.update(rank=rank, world=ranks, ordinal=rank, ordinals=ranks)
            elif r.get("k") == "start":
                r["pid"] = 10000 + rank
            elif r.get("k") == "graph" and rank in DIVERGING and graphs and r["id"] == graphs[middle]["id"]:
                other = graphs[(middle + 1) % len(graphs)]  # another variant's graph at this step
                r.update(hash=other["hash"], module=other["module"])
            out.append(r)
        (proc / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out))
        (proc / "meta.json").write_text(
            json.dumps({**meta, "pid": 10000 + rank, "rank": rank, "world_size": ranks}, indent=1) + "\n"
        )
    return {"ranks": ranks, "graphs_per_rank": len(graphs), "build_s": time.perf_counter() - start}


def run_report(folder: Path, timeout: float) -> dict[str, Any]:
    """`xlagraph report DIR` in a fresh interpreter: wall time, peak RSS, exit status."""
    code = "import sys; from xlagraph.cli.main import main; sys.argv = ['xlagraph', *sys.argv[1:]]; main()"
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH") or str(REPO_ROOT))
    start = time.perf_counter()
    with open(os.devnull, "w") as sink:
        argv = [sys.executable, "-c", code, "report", str(folder)]
        proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=sink)
        timer = threading.Timer(timeout, proc.kill)  # os.wait4 (for the peak RSS) has no timeout
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
    return {
        "wall_s": time.perf_counter() - start,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "exit_code": os.waitstatus_to_exitcode(status),
        "timed_out": os.WIFSIGNALED(status),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--source", type=Path, default=SOURCE, help="a single-process capture folder")
    parser.add_argument("--force", action="store_true", help="rebuild the rank folders")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "ranks.json")
    args = parser.parse_args(argv)
    if not (args.source / "journal.jsonl").exists():
        print(f"no capture at {args.source}: run `python benchmarks/bench_report.py --build-only` first")
        return 2
    folder = DATA_DIR / f"ranks_capture_{args.ranks}"
    if args.force and folder.exists():
        shutil.rmtree(folder)
    summary = build(args.source, folder, args.ranks)
    print(f"{args.ranks} rank folders in {folder} ({summary['build_s']:.1f} s)")
    if args.build_only:
        return 0
    runs = [run_report(folder, args.timeout) for _ in range(args.repeat)]
    walls = sorted(r["wall_s"] for r in runs)
    median = walls[len(walls) // 2]
    rss = max(r["peak_rss_mb"] for r in runs)
    met = median < GOAL_S and rss < GOAL_MB and all(r["exit_code"] in (0, 1) for r in runs)
    print(
        markdown_table(
            ["ranks", "graphs per rank", "runs", "median wall (s)", "peak RSS", "exit", "goal", "met"],
            [
                [
                    str(args.ranks),
                    str(summary["graphs_per_rank"]),
                    str(len(runs)),
                    fmt_s(median),
                    fmt_rss(rss, None),
                    ",".join(str(r["exit_code"]) for r in runs),
                    "< 30 s, < 2 GB (1,024 ranks)",
                    ("✅" if met else "❌") if args.ranks == 1024 else "— (goal is for 1,024)",
                ]
            ],
        )
    )
    write_json(args.out, {"environment": environment(), "summary": summary, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
