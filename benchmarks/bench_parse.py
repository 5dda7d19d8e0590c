"""Parse speed: xlagraph's HLO parser next to XLA's own C++ parser, on the same files, in one run.

Both parsers get the module text already in memory (file reading is not timed):

* XLA:      ``jaxlib._hlo.hlo_module_from_text(text)``
* xlagraph: ``xlagraph.parse.hlo.parse_hlo(text, path)`` (the compiled reader, its canonical form of every
  computation and building the Python IR and the canonical dictionaries), and, to show the split, the
  compiled reader alone (``xlagraph._core.parse_only(text)``) and the reader with canonicalization but
  without any Python IR (``xlagraph._core.summarize_hlo``, all that ``xlagraph graphs`` needs).

Then, whole processes as a user runs them (interpreter start-up, imports and file reading included), one
run each: ``xlagraph graphs FILE`` (parse and fingerprint) next to a fresh process in which XLA parses
the file. Goal (issue 39; issue 10's was 0.5x): ``graphs`` at most 0.3x XLA's process for the 120K
module. On a loaded machine one run each is noisy: ``bench_versions.py`` repeats them in turn.

Every (file, parser) pair is measured in a fresh interpreter (``_harness.py``) that parses the text N times
and reports best and median; its peak RSS (``ru_maxrss`` of that child, read with ``os.wait4``) covers the
interpreter, imports, the text and the largest parsed module; in brackets: the growth over the RSS measured
just before the first parse (after imports and reading the text). The parsed result is released (untimed)
before the next repetition. The Python garbage collector is left at its defaults.

Output: a markdown table on stdout and ``benchmarks/_results/parse.json``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import (
    DEFAULT_SIZES,
    RESULTS_DIR,
    ChildResult,
    check,
    child_error,
    count_instructions,
    data_path,
    environment,
    fmt_rss,
    fmt_s,
    fmt_x,
    markdown_table,
    parse_sizes,
    run_worker,
    write_json,
)

PARSE_RATIO_GOAL = 1.0
GRAPHS_RATIO_GOAL = 0.3


@dataclass
class Side:
    """One parser's measurement of one file."""

    best_s: float | None = None
    median_s: float | None = None
    times_s: list[float] | None = None
    peak_rss_mb: float | None = None
    rss_before_mb: float | None = None
    error: str | None = None


@dataclass
class Row:
    file: str
    instructions: int
    bytes: int
    repeat: int
    xla: Side
    xlagraph: Side
    core: Side
    summary: Side
    xla_process_s: float | None = None
    graphs_process_s: float | None = None

    @property
    def process_ratio(self) -> float | None:
        if self.xla_process_s and self.graphs_process_s is not None:
            return self.graphs_process_s / self.xla_process_s
        return None

    @property
    def ratio(self) -> float | None:
        if self.xla.best_s and self.xlagraph.best_s is not None:
            return self.xlagraph.best_s / self.xla.best_s
        return None


def measure(command: str, path: Path, repeat: int, timeout_s: float) -> Side:
    result: ChildResult = run_worker([command, str(path), "--repeat", str(repeat)], timeout_s)
    if not result.ok:
        return Side(error=child_error(result))
    p = result.payload
    return Side(p["best_s"], p["median_s"], p["times_s"], result.peak_rss_mb, p["rss_before_mb"])


def bench_file(path: Path, args: argparse.Namespace) -> Row:
    text = path.read_text()
    instructions = count_instructions(text)
    repeat = args.repeat if instructions <= args.large else args.repeat_large
    print(f"{path.name}: {instructions:,} instructions, {len(text) / 1e6:.1f} MB, N={repeat}", flush=True)
    xla = measure("xla-parse", path, repeat, args.timeout)
    print(
        f"  XLA      best {fmt_s(xla.best_s)} s  median {fmt_s(xla.median_s)} s  {xla.error or ''}",
        flush=True,
    )
    ours = measure("xlagraph-parse", path, repeat, args.timeout)
    note = ours.error or ""
    print(f"  xlagraph best {fmt_s(ours.best_s)} s  median {fmt_s(ours.median_s)} s  {note}", flush=True)
    core = measure("core-parse", path, repeat, args.timeout)
    print(
        f"  of which the compiled reader alone: best {fmt_s(core.best_s)} s  {core.error or ''}", flush=True
    )
    summary = measure("core-summary", path, repeat, args.timeout)
    print(
        f"  compiled reader and canonical form, no Python IR: best {fmt_s(summary.best_s)} s  "
        f"{summary.error or ''}",
        flush=True,
    )
    xla_process = run_worker(["xla-once", str(path)], args.timeout)
    graphs_process = run_worker(["cli-graphs", str(path)], args.timeout)
    xla_wall = xla_process.wall_s if xla_process.ok else None
    graphs_wall = graphs_process.wall_s if graphs_process.ok else None
    print(
        f"  whole process: XLA parse {fmt_s(xla_wall)} s, xlagraph graphs {fmt_s(graphs_wall)} s", flush=True
    )
    return Row(
        path.name, instructions, len(text.encode()), repeat, xla, ours, core, summary, xla_wall, graphs_wall
    )


def table(rows: list[Row]) -> str:
    headers = [
        "file",
        "instructions",
        "size (MB)",
        "N",
        "XLA best / median (s)",
        "xlagraph best / median (s)",
        "of which compiled reader (s)",
        "reader + canonical, no IR (s)",
        "xlagraph / XLA",
        f"goal ≤ {PARSE_RATIO_GOAL:g}",
        "XLA peak RSS (+parse) MB",
        "xlagraph peak RSS (+parse) MB",
    ]
    body = []
    for r in rows:
        ratio = r.ratio
        body.append(
            [
                f"`{r.file}`",
                f"{r.instructions:,}",
                f"{r.bytes / 1e6:.1f}",
                str(r.repeat),
                f"{fmt_s(r.xla.best_s)} / {fmt_s(r.xla.median_s)}",
                f"{fmt_s(r.xlagraph.best_s)} / {fmt_s(r.xlagraph.median_s)}",
                fmt_s(r.core.best_s),
                fmt_s(r.summary.best_s),
                fmt_x(ratio),
                check(None if ratio is None else ratio <= PARSE_RATIO_GOAL),
                fmt_rss(r.xla.peak_rss_mb, r.xla.rss_before_mb),
                fmt_rss(r.xlagraph.peak_rss_mb, r.xlagraph.rss_before_mb),
            ]
        )
    return markdown_table(headers, body)


def process_table(rows: list[Row]) -> str:
    headers = [
        "file",
        "XLA parse, whole process (s)",
        "`xlagraph graphs`, whole process (s)",
        "graphs / XLA",
        f"goal ≤ {GRAPHS_RATIO_GOAL:g}",
    ]
    body = [
        [
            f"`{r.file}`",
            fmt_s(r.xla_process_s),
            fmt_s(r.graphs_process_s),
            fmt_x(r.process_ratio),
            check(None if r.process_ratio is None else r.process_ratio <= GRAPHS_RATIO_GOAL),
        ]
        for r in rows
    ]
    return markdown_table(headers, body)


def notes(rows: list[Row]) -> list[str]:
    errors = {(side, r.file): s.error for r in rows for side, s in (("XLA", r.xla), ("xlagraph", r.xlagraph))}
    out = [f"{side} failed on {file}: {err}" for (side, file), err in errors.items() if err]
    if any(r.xlagraph.error and r.xlagraph.error.startswith("import") for r in rows):
        out.insert(
            0, "NOTE: xlagraph.parse.hlo.parse_hlo is not importable yet; only XLA's figures are reported."
        )
    return out


def default_files(sizes: list[str]) -> list[Path]:
    files = [data_path(size, variant) for size in sizes for variant in ("a", "a.noshapes")]
    missing = [f for f in files if not f.exists()]
    if missing:
        sys.exit(f"missing {', '.join(f.name for f in missing)}: run `python benchmarks/generate.py` first")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=parse_sizes, default=list(DEFAULT_SIZES), help="e.g. 30k,120k")
    parser.add_argument("--files", type=Path, nargs="+", help="explicit HLO files instead of --sizes")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions per file (default 3)")
    parser.add_argument("--repeat-large", type=int, default=1, help="repetitions for files above --large")
    parser.add_argument(
        "--large", type=int, default=300_000, help="instruction count above which a file is large"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per measurement process")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "parse.json")
    args = parser.parse_args(argv)

    env = environment()
    print(f"load average at start: {env['loadavg_1_5_15']} on {env['cpus']} CPUs")
    rows = [bench_file(path, args) for path in (args.files or default_files(args.sizes))]
    print()
    print(table(rows))
    print()
    print(process_table(rows))
    for line in notes(rows):
        print(line)
    payload: dict[str, Any] = {
        "environment": env,
        "rss": "peak_rss_mb = ru_maxrss of a fresh child process per (file, parser), read with os.wait4; "
        "rss_before_mb = the child's ru_maxrss after imports and reading the text, before parsing",
        "goal": {"xlagraph_over_xla_max": PARSE_RATIO_GOAL, "graphs_process_over_xla_max": GRAPHS_RATIO_GOAL},
        "rows": [{**asdict(r), "ratio": r.ratio, "process_ratio": r.process_ratio} for r in rows],
    }
    write_json(args.out, payload)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
