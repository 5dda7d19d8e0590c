"""`xlagraph report` over a pod's worth of rank folders (issue 22: 1,024 ranks under 30 s, 2 GB).

The pod is simulated from a real capture in `fixtures/` (default: the torch_xla corpus capture
`h7_megatronbert_packed_doc_pool`, one process, 7 steps, 21 graph executions of 9 distinct graphs,
`--source DIR` for another single-process capture folder). Each rank is a copy of that process
folder, as `xmp.spawn` writes it (`<host>-<pid>/`, its own `meta.json` and journal saying `rank R
of W`): graph files, stored sources and tensor reports are hard links (copies where links fail),
so every rank's files hold the same bytes. A few ranks diverge (`DIVERGING`): at the middle step
they run the real graph the capture ran at the next step, and that step's graph a step later (a
rank whose packed batches come in another order), each compiled once.

The folders are written into a temporary directory (removed afterwards unless `--keep`), then
`xlagraph report DIR` runs as a whole process under `/usr/bin/time -v` (stdout to /dev/null), which
gives its wall time and peak RSS. `--ranks N` measures a smaller pod.

Output: a markdown table on stdout and `_results/ranks.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import REPO_ROOT, RESULTS_DIR, environment, fmt_rss, fmt_s, markdown_table, write_json

SOURCE = REPO_ROOT / "fixtures" / "torch_xla" / "corpus" / "captures" / "h7_megatronbert_packed_doc_pool"
GOAL_S = 30.0
GOAL_MB = 2048.0
DIVERGING = (5, 300, 777)  # ranks that run the graphs of two steps in the other order (those below N)
_KEEP = frozenset({"k", "id", "step", "compiled"})  # a graph record's place in the run, not its graph


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _swapped(graphs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Graph id -> the graph record a diverging rank writes in its place: the first graph of the
    middle step and of the step after it trade what they are (hash, module, tensors, ...)."""
    by_step: dict[int, dict[str, Any]] = {}
    for g in graphs:
        by_step.setdefault(int(g.get("step", -1)), g)
    steps = sorted(by_step)
    if len(steps) < 2:
        return {}
    a, b = by_step[steps[len(steps) // 2]], by_step[steps[len(steps) // 2 + 1 if len(steps) > 2 else 1]]

    def trade(mine: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
        return {
            **{k: v for k, v in other.items() if k not in _KEEP},
            **{k: mine[k] for k in _KEEP if k in mine},
        }

    return {a["id"]: trade(a, b), b["id"]: trade(b, a)}


def build(source: Path, folder: Path, ranks: int, diverging: tuple[int, ...] = DIVERGING) -> dict[str, Any]:
    """One process folder per rank under `folder`, from `source` (a single-process capture);
    the ranks in `diverging` run the graphs of two steps in the other order."""
    lines = (source / "journal.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line]
    meta = json.loads((source / "meta.json").read_text())
    graphs = [r for r in records if r.get("k") == "graph"]
    swapped = _swapped(graphs)
    subs = [d for d in sorted(source.iterdir()) if d.is_dir()]
    start = time.perf_counter()
    for rank in range(ranks):
        pid = 10000 + rank
        proc = folder / f"vm-{pid}"
        for sub in subs:
            (proc / sub.name).mkdir(parents=True, exist_ok=True)
            for f in sub.iterdir():
                if f.is_file():
                    _link(f, proc / sub.name / f.name)
        rank_info = {
            **meta.get("rank_info", {}),
            "rank": rank,
            "world": ranks,
            "ordinal": rank,
            "ordinals": ranks,
        }
        out = []
        for r in records:
            if r.get("k") == "rank":
                r = {**r, "rank": rank, "world": ranks, "ordinal": rank, "ordinals": ranks}
            elif r.get("k") == "start":
                r = {**r, "pid": pid}
            elif r.get("k") == "graph" and rank in diverging and r.get("id") in swapped:
                r = swapped[r["id"]]
            out.append(r)
        (proc / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out))
        new_meta = {**meta, "pid": pid, "rank": rank, "world_size": ranks, "rank_info": rank_info}
        (proc / "meta.json").write_text(json.dumps(new_meta, indent=1) + "\n")
    return {
        "source": os.path.relpath(source, REPO_ROOT),
        "ranks": ranks,
        "graph_executions_per_rank": sum(len(r.get("e", ())) for r in records if r.get("k") == "step"),
        "distinct_graphs_per_rank": len(graphs),
        "diverging": [r for r in diverging if r < ranks],
        "build_s": round(time.perf_counter() - start, 2),
    }


_TIME_FIELDS = {
    "wall": re.compile(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)"),
    "rss_kb": re.compile(r"Maximum resident set size \(kbytes\): (\d+)"),
    "user": re.compile(r"User time \(seconds\): (\S+)"),
    "system": re.compile(r"System time \(seconds\): (\S+)"),
}


def _seconds(clock: str) -> float:
    total = 0.0
    for part in clock.split(":"):
        total = total * 60 + float(part)
    return total


def run_report(folder: Path, timeout: float, extra: list[str]) -> dict[str, Any]:
    """`/usr/bin/time -v xlagraph report DIR` in a fresh interpreter: wall, CPU, peak RSS, exit."""
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH") or str(REPO_ROOT))
    argv = ["/usr/bin/time", "-v", sys.executable, "-m", "xlagraph.cli.main", "report", str(folder), *extra]
    with open(os.devnull, "w") as sink:
        proc = subprocess.run(
            argv, cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.PIPE, text=True, timeout=timeout
        )
    found = {k: m.group(1) for k, rx in _TIME_FIELDS.items() if (m := rx.search(proc.stderr))}
    return {
        "wall_s": _seconds(found.get("wall", "0")),
        "cpu_s": float(found.get("user", 0)) + float(found.get("system", 0)),
        "peak_rss_mb": int(found.get("rss_kb", 0)) / 1024,
        "exit_code": proc.returncode,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--source", type=Path, default=SOURCE, help="a single-process capture folder")
    parser.add_argument("--dir", type=Path, help="build the rank folders here (kept) instead of a temp dir")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--json", action="store_true", help="time `report --json`")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "ranks.json")
    args = parser.parse_args(argv)
    if not (args.source / "journal.jsonl").exists():
        print(f"no capture at {args.source}")
        return 2
    folder = args.dir or Path(tempfile.mkdtemp(prefix="xlagraph_ranks_"))
    try:
        summary = build(args.source, folder, args.ranks)
        print(f"{args.ranks} rank folders in {folder} ({summary['build_s']:.1f} s)")
        if args.build_only:
            return 0
        extra = ["--json"] if args.json else []
        runs = [run_report(folder, args.timeout, extra) for _ in range(args.repeat)]
    finally:
        if args.dir is None and not args.keep and not args.build_only:
            shutil.rmtree(folder, ignore_errors=True)
    walls = sorted(r["wall_s"] for r in runs)
    median = walls[len(walls) // 2]
    rss = max(r["peak_rss_mb"] for r in runs)
    met = median < GOAL_S and rss < GOAL_MB and all(r["exit_code"] in (0, 1) for r in runs)
    print(
        markdown_table(
            [
                "ranks",
                "graph runs per rank",
                "runs",
                "median wall (s)",
                "CPU (s)",
                "peak RSS",
                "exit",
                "goal",
                "met",
            ],
            [
                [
                    str(args.ranks),
                    f"{summary['graph_executions_per_rank']} ({summary['distinct_graphs_per_rank']} graphs)",
                    str(len(runs)),
                    fmt_s(median),
                    ", ".join(f"{r['cpu_s']:.1f}" for r in runs),
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
