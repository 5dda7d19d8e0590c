"""The long fuzz run: tests/test_fuzz.py's mutators and contract, for as long as you like.

    python benchmarks/fuzz_long.py --minutes 15 [--seed 0] [--log findings.md] [--save-dir DIR]

Cycles through mutated HLO modules (graphs / graphs --json / diff against the seed / diff with
itself), mutated save files (graphs, diff #0 #1) and capture folders with mutated journal and meta
records (report, check). For `graphs` it also checks that xlagraph accepts exactly what jaxlib
accepts (the "reader:" classes: not part of the CI contract, a differential check of the reader).
Every breach is classified; the first input of each new class is kept under --save-dir (with the
command) and, with --log, a line is appended to the log as soon as it is found. Ends with the
figures: cases run, exit statuses, breaches per class. The run uses a private copy of the package
and of the seeds, taken when it starts.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("fuzz_harness", ROOT / "fixtures" / "fuzz" / "harness.py")
assert _spec is not None and _spec.loader is not None
harness = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = harness
_spec.loader.exec_module(harness)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)[:60].strip("_")


class Log:
    """New breach classes: kept on disk with their input, and appended to the log at once."""

    def __init__(self, log: Path | None, save_dir: Path) -> None:
        self.log, self.save_dir = log, save_dir
        self.classes: Counter[str] = Counter()

    def record(self, cls: str, where: str, inputs: dict[str, Path], command: str) -> None:
        self.classes[cls] += 1
        if self.classes[cls] > 1:
            return
        keep = self.save_dir / f"{len(self.classes):03d}_{_slug(cls)}"
        keep.mkdir(parents=True, exist_ok=True)
        for name, path in inputs.items():
            if path.is_dir():
                shutil.copytree(path, keep / name, dirs_exist_ok=True)
            else:
                shutil.copyfile(path, keep / name)
        (keep / "command.txt").write_text(f"{command}\n{where}\n")
        line = f"- [{time.strftime('%H:%M')}] {cls} -- {where}; input: {keep}\n"
        print(line, end="", flush=True)
        if self.log is not None:
            with self.log.open("a") as f:
                f.write(line)


def snapshot_package(into: Path) -> Path:
    """A private copy of the package as installed (xlagraph with its compiled reader, cli, templates):
    a long run must not see the checkout change or the extension be rebuilt under it."""
    if not any((ROOT / "xlagraph").glob("_core*.so")):
        raise SystemExit("xlagraph/_core*.so is missing: build it (pip install -e .) first")
    shutil.copytree(ROOT / "xlagraph", into / "xlagraph", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "cli", into / "xlagraph" / "cli", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "templates", into / "xlagraph" / "templates")
    return into


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=15)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log", type=Path, help="append each new breach class to this file")
    ap.add_argument("--save-dir", type=Path, default=Path(tempfile.gettempdir()) / "xlagraph_fuzz")
    ap.add_argument("--no-oracle", action="store_true", help="skip jaxlib for diff verdicts 'identical'")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    seeds = harness.hlo_seeds()
    seed_bytes = [p.read_bytes() for p in seeds]
    snapshot = Path(tempfile.mkdtemp(prefix="xlagraph_fuzz_"))
    harness.ENV["PYTHONPATH"] = harness.WORKDIR = str(snapshot_package(snapshot / "package"))
    saves = [(p, p.read_bytes()) for p in harness.save_seeds()]
    # Copied once: the fixtures may be regenerated while this runs.
    captures = [shutil.copytree(p, snapshot / "captures" / p.name) for p in harness.capture_seeds()]
    names = sorted(harness.MUTATORS)
    signatures: dict[bytes, tuple[str, ...] | None] = {}

    def signature(data: bytes) -> tuple[str, ...] | None:
        if args.no_oracle:
            return None
        if data not in signatures:
            signatures[data] = harness.jaxlib_signature(data)
        return signatures[data]

    log = Log(args.log, args.save_dir)
    if args.log is not None:
        with args.log.open("a") as f:
            f.write(f"\n## fuzz_long {time.strftime('%H:%M')} (seed {args.seed}, {args.minutes} min)\n")
    runner = harness.Runner()
    jaxlib = None if args.no_oracle else harness.JaxlibWorker()
    codes: list = []
    cases = Counter[str]()
    end = time.monotonic() + 60 * args.minutes
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        while time.monotonic() < end:
            kind = rng.choices(("hlo", "save", "capture"), weights=(7, 1, 2))[0]
            case_seed = rng.randrange(1 << 30)
            case_rng = random.Random(case_seed)
            cases[kind] += 1
            if kind == "hlo":
                k = case_rng.randrange(len(seeds))
                ops = case_rng.choices(names, k=case_rng.randint(1, 3))
                command = case_rng.choice(harness.HLO_COMMANDS)
                mutated = harness.mutate(case_rng, seed_bytes[k], seed_bytes, ops)
                found = harness.hlo_case(
                    runner, work, seed_bytes[k], mutated, command, signature, codes, jaxlib
                )
                where = f"seed file {seeds[k].relative_to(ROOT)} ops={ops} case seed={case_seed}"
                inputs = {"seed.hlo": work / "seed.hlo", "mutated.hlo": work / "mutated.hlo"}
                shown = f"xlagraph {command.replace('seed', 'seed.hlo').replace('self', '')} mutated.hlo"
            elif kind == "save":
                source, data = case_rng.choice(saves)
                op = case_rng.choice(names)
                path = work / "save_hlo.txt"
                path.write_bytes(harness.mutate(case_rng, data, seed_bytes, [op]))
                found = harness.save_case(runner, path, codes)
                where = f"seed {source.relative_to(ROOT)} op={op} case seed={case_seed}"
                inputs, shown = (
                    {"save_hlo.txt": path},
                    "xlagraph graphs save_hlo.txt; xlagraph diff ...#0 ...#1",
                )
            else:
                source = Path(case_rng.choice(captures))
                folder = work / "capture"
                shutil.rmtree(folder, ignore_errors=True)
                shutil.copytree(source, folder)
                what = harness.mutate_capture(case_rng, folder, case_rng.randint(1, 3))
                found = harness.capture_case(runner, folder, codes)
                where = f"capture {source.name}: {what[:200]}"
                inputs, shown = (
                    {"capture": folder},
                    "xlagraph report capture; xlagraph check --max-graphs 2 capture",
                )
            for cls in found:
                log.record(cls, where, inputs, shown)
    runner.close()
    if jaxlib is not None:
        jaxlib.close()
    shutil.rmtree(snapshot, ignore_errors=True)
    summary = {
        "minutes": args.minutes,
        "cases": dict(cases),
        "commands": len(codes),
        "outcomes": {str(k): v for k, v in Counter(codes).most_common()},
        "breaches": dict(log.classes.most_common()),
        "worker_restarts": runner.restarts,
    }
    print(json.dumps(summary, indent=1))
    if args.log is not None:
        with args.log.open("a") as f:
            f.write(f"fuzz_long summary: {json.dumps(summary)}\n")
    return 1 if log.classes else 0


if __name__ == "__main__":
    sys.exit(main())
