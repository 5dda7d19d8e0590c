"""Whole processes of two checkouts interleaved, with XLA's parser on the same files in the same
loop: wall, CPU (user + system, `os.wait4`) and peak RSS of each process.

```bash
python benchmarks/bench_versions.py --old /work/main --new . --rounds 3 diff A B --json
python benchmarks/bench_versions.py --old /work/main --new . --rounds 1 --no-xla report DIR --json
```

Each process starts with `python -P` and `PYTHONPATH=<checkout>`, so that each imports its own
`xlagraph` (see benchmarks/README.md), and runs that checkout's own `cli/` as `xlagraph.cli`: an
editable install (`pip install -e`) maps `xlagraph.cli` to the `cli/` of the checkout it was made
from, whatever `PYTHONPATH` says, so a worktree's command would otherwise run another checkout's
CLI. XLA's process parses the `.hlo` arguments (or `--xla-files`, e.g. a report's variants) with
`jaxlib._hlo.hlo_module_from_text`, reading them itself. Output is discarded.

```bash
python benchmarks/bench_versions.py --old /work/main --new . --rounds 3 \
    --xla-files benchmarks/_data/report_variants/*.hlo -- report benchmarks/_data/report_capture
```
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

XLA = (
    "import sys\nfrom jaxlib._hlo import hlo_module_from_text\n"
    "for p in sys.argv[1:]:\n    hlo_module_from_text(open(p).read())\n"
)

# `python -m xlagraph.cli.main ARGS` with the checkout's own cli/ (argv[1]) as `xlagraph.cli`.
CLI = (
    "import importlib.util, sys\n"
    "root = sys.argv.pop(1)\n"
    "spec = importlib.util.spec_from_file_location('xlagraph.cli', root + '/cli/__init__.py',"
    " submodule_search_locations=[root + '/cli'])\n"
    "cli = importlib.util.module_from_spec(spec)\n"
    "sys.modules['xlagraph.cli'] = cli\n"
    "spec.loader.exec_module(cli)\n"
    "from xlagraph.cli.main import entry\n"
    "sys.argv[0] = 'xlagraph'\n"
    "entry()\n"
)


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)}: exit {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="checkout of the code before")
    parser.add_argument("--new", required=True, help="checkout of the code after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-xla", action="store_true")
    parser.add_argument(
        "--xla-files", nargs="+", help="what XLA's process parses (default: the .hlo arguments)"
    )
    parser.add_argument(
        "--cached-bytecode",
        action="store_true",
        help="each checkout's bytecode written to a folder of its own by an untimed first run, as an "
        "install's first run leaves it (where PYTHONDONTWRITEBYTECODE is set, every run compiles "
        "every module again; XLA's side imports jax, cached at install)",
    )
    parser.add_argument("args", nargs=argparse.REMAINDER, help="xlagraph arguments")
    args = parser.parse_args()
    args.args = args.args[1:] if args.args[:1] == ["--"] else args.args
    kinds: dict[str, tuple[list[str], dict[str, str]]] = {}
    for name, root in (("old", args.old), ("new", args.new)):
        root = os.path.abspath(root)
        env = dict(os.environ, PYTHONPATH=root)
        kinds[name] = ([sys.executable, "-P", "-c", CLI, root, *args.args], env)
        if args.cached_bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix=f"bench-{name}-pyc-")
            run(*kinds[name])  # untimed: writes the bytecode the timed runs read
    if not args.no_xla:
        files = args.xla_files or [a for a in args.args if a.endswith(".hlo")]
        kinds["xla"] = ([sys.executable, "-c", XLA, *files], dict(os.environ))
    got: dict[str, list[tuple[float, float, float]]] = {k: [] for k in kinds}
    for r in range(args.rounds):
        for name, (cmd, env) in kinds.items():
            got[name].append(run(cmd, env))
            w, c, m = got[name][-1]
            print(f"round {r + 1} {name}: wall {w:.2f} s, CPU {c:.2f} s, peak {m:.0f} MB", flush=True)
    print(f"load average {os.getloadavg()}")
    for name, rows in got.items():
        med = [statistics.median(x) for x in zip(*rows, strict=True)]
        print(f"median {name}: wall {med[0]:.2f} s, CPU {med[1]:.2f} s, peak {med[2]:.0f} MB")
    for name in ("old", "new") if "xla" in got else ():
        # Each round's ratio to the XLA process run beside it, then their median.
        wall, cpu = (
            statistics.median(r[k] / x[k] for r, x in zip(got[name], got["xla"], strict=True)) for k in (0, 1)
        )
        print(f"{name} / xla, median of rounds: wall {wall:.2f}x, CPU {cpu:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
