"""Are the answers byte for byte what they were? (issue 22: speed must not change any output.)

Records, then compares, every output a speed change could alter:

* `xlagraph diff A B --json` (and its exit status) for every fixture pair the tests diff
  (`tests/data/fixture_pairs.txt`, gathered by running the tests that diff fixture pairs) and for
  the large benchmark pairs of `generate.py` when they are in `_data/` (`--no-large` skips them);
* `xlagraph report SRC --json` for every capture folder and XLA_SAVE_TENSORS_FILE dump under
  `fixtures/`, and for `bench_report.py`'s 20-variant capture when it has been built;
* `python benchmarks/eval_diagnosis.py --split all` (its tables, as printed).

```bash
PYTHONPATH=<old checkout> python benchmarks/check_same_answers.py --record   # before a change
python benchmarks/check_same_answers.py                                      # after: exit 1 if any differs
```

The golden files go to `_data/golden/` (git-ignored; `--golden DIR` elsewhere). Everything runs
in this process through the click command (no interpreter start-up per pair) and under
PYTHONHASHSEED=0, with the repository root as the working directory, so paths in the output are
the same relative ones whichever checkout's code runs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
PAIRS = REPO_ROOT / "tests" / "data" / "fixture_pairs.txt"
GOLDEN = BENCH_DIR / "_data" / "golden"
LARGE = ("30k", "120k", "600k")


def fixture_pairs() -> list[tuple[str, str]]:
    """The pairs of `tests/data/fixture_pairs.txt`: `A<TAB>B` per line, relative to the root."""
    lines = PAIRS.read_text(encoding="utf-8").splitlines()
    return [(a, b) for a, b in (line.split("\t") for line in lines if line and not line.startswith("#"))]


def report_sources() -> list[str]:
    """Capture folders (a folder of per-process folders counts once) and save files in fixtures/."""
    found: set[str] = set()
    for journal in (REPO_ROOT / "fixtures").rglob("journal.jsonl"):
        folder = journal.parent
        # The fixtures' multi-process captures are folders named `capture` (report them whole);
        # the corpus's single-process captures are siblings, each reported on its own.
        if folder.parent.name == "capture":
            folder = folder.parent
        found.add(str(folder.relative_to(REPO_ROOT)))
    for save in (REPO_ROOT / "fixtures").rglob("save*.0"):
        found.add(str(save.relative_to(REPO_ROOT)))
    return sorted(found)


def items(large: bool) -> list[tuple[str, list[str]]]:
    """(golden file name, xlagraph arguments) for every output compared."""
    out = [(f"diff-{_key(a, b)}", ["diff", a, b, "--json"]) for a, b in fixture_pairs()]
    out += [(f"report-{_key(src)}", ["report", src, "--json"]) for src in report_sources()]
    data = BENCH_DIR / "_data"
    if large:
        for size in LARGE:
            a, b = data / f"transformer_{size}_a.hlo", data / f"transformer_{size}_b.hlo"
            if a.exists() and b.exists():
                rel = [str(p.relative_to(REPO_ROOT)) for p in (a, b)]
                out.append((f"large-diff-{size}", ["diff", *rel, "--json"]))
        capture = data / "report_capture"
        if (capture / "vm-1" / "journal.jsonl").exists():
            out.append(("large-report-20", ["report", str(capture.relative_to(REPO_ROOT)), "--json"]))
    return out


def _key(*args: str) -> str:
    """A golden file's name: stable whatever else the lists hold."""
    return hashlib.sha1("\t".join(args).encode()).hexdigest()[:12]


def run_cli(args: list[str]) -> bytes:
    """The command's stdout and exit status, as one blob."""
    from click.testing import CliRunner
    from xlagraph.cli.main import xlagraph

    result = CliRunner().invoke(xlagraph, args, catch_exceptions=True)
    tail = f"\n--- exit {result.exit_code}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        tail += f" {type(result.exception).__name__}: {result.exception}"
    return result.stdout_bytes + tail.encode()


def eval_output() -> bytes:
    proc = subprocess.run(
        [sys.executable, str(BENCH_DIR / "eval_diagnosis.py"), "--split", "all"],
        cwd=REPO_ROOT,
        capture_output=True,
        env=os.environ,
        check=False,
    )
    return proc.stdout + f"\n--- exit {proc.returncode}".encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="write the golden files instead of comparing")
    parser.add_argument("--missing", action="store_true", help="with --record: only new items")
    parser.add_argument("--golden", type=Path, default=GOLDEN)
    parser.add_argument("--no-large", action="store_true", help="skip the large benchmark pairs")
    parser.add_argument("--no-eval", action="store_true", help="skip eval_diagnosis.py")
    parser.add_argument("-k", default="", help="only items whose name or arguments contain this")
    args = parser.parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    os.chdir(REPO_ROOT)
    import xlagraph

    print(f"xlagraph from {Path(xlagraph.__file__).parent}")
    todo = [(name, a) for name, a in items(not args.no_large) if args.k in name + " ".join(a)]
    args.golden.mkdir(parents=True, exist_ok=True)
    differ: list[str] = []
    missing: list[str] = []
    start = time.perf_counter()
    jobs: list[tuple[str, str, object]] = [(name, " ".join(a), a) for name, a in todo]
    if not args.no_eval and (not args.k or args.k in "eval"):
        jobs.append(("eval-all", "eval_diagnosis.py --split all", None))
    if args.record and args.missing:
        jobs = [j for j in jobs if not (args.golden / f"{j[0]}.out").exists()]
    for k, (name, label, cli_args) in enumerate(jobs, 1):
        blob = eval_output() if cli_args is None else run_cli(cli_args)  # type: ignore[arg-type]
        blob = label.encode() + b"\n" + blob
        path = args.golden / f"{name}.out"
        if args.record:
            path.write_bytes(blob)
        elif not path.exists():
            missing.append(name)
        elif path.read_bytes() != blob:
            differ.append(f"{name}: {label}")
            (args.golden / f"{name}.now").write_bytes(blob)
        if sys.stderr.isatty():
            print(f"\r{k}/{len(jobs)}", end="", file=sys.stderr, flush=True)
    took = time.perf_counter() - start
    goldens = [args.golden / f"{n}.out" for n, _, _ in jobs]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in goldens if p.exists())).hexdigest()[:16]
    if sys.stderr.isatty():
        print(file=sys.stderr)
    if args.record:
        print(f"recorded {len(jobs)} outputs in {args.golden} ({took:.0f} s), digest {digest}")
        return 0
    same = len(jobs) - len(differ) - len(missing)
    print(f"{same}/{len(jobs)} outputs byte-identical to {args.golden} ({took:.0f} s)")
    for line in differ:
        print(f"DIFFERS {line}  (now: {args.golden}/{line.split(':')[0]}.now)")
    for name in missing:
        print(f"NO GOLDEN {name} (run with --record on the old code first)")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
