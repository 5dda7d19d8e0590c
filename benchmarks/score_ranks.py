#!/usr/bin/env python3
"""Score xlagraph's rank view (several processes) against a TRUTH.json written from the scripts.

    python fixtures/torch_xla/ranks/generate.py --heldout        # capture the blind round
    python benchmarks/score_ranks.py                             # score it (ranks/heldout/)
    python benchmarks/score_ranks.py --set heldout eval_sync     # one scenario
    python benchmarks/score_ranks.py --set ranks                 # the three known scenarios (not blind)
    python benchmarks/score_ranks.py --json                      # rows as JSON

Runs `xlagraph report <name>/capture --json` per scenario and reads its `ranks` object. Per scenario:
agree, the first divergent step, the diverging ranks (every group but the baseline), hang (a
`collectives` mismatch reported or not) and the step it names, kind (any of the truth's expected or
accepted kinds among the causes of the divergence diffs; a clean run: no divergence), false causes
(causes of a forbidden kind; on a clean run any divergence counts as one at least), line (the
truth's guilty line or one of its accepted lines among the causes' `sources`, matched by file name
and line; "none cited" when no cause carries a line of the script).
The goal of issue 37: false causes in under 1 in 10 scripts on a first blind run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RANKS = ROOT / "fixtures" / "torch_xla" / "ranks"
SETS = {"heldout": RANKS / "heldout", "ranks": RANKS}
COLUMNS = ("agree", "step", "ranks", "hang", "hang_step", "kind", "line")


def report_json(capture: Path) -> dict:
    """`xlagraph report CAPTURE --json`, run as a user runs it (the CLI, in a process of its own)."""
    cli = "from cli.main import xlagraph; xlagraph()"
    cmd = [sys.executable, "-c", cli, "report", str(capture), "--json"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{capture}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def _line_key(location: str) -> str:
    """'some/dir/eval_sync.py:69' -> 'eval_sync.py:69': captures keep paths as the run saw them."""
    path, _, line = location.rpartition(":")
    return f"{Path(path).name}:{line}"


def score(name: str, truth: dict, ranks: dict | None) -> dict:
    """One scenario's row: what the rank view found against what its TRUTH entry says."""
    if ranks is None:
        return {"name": name, **dict.fromkeys(COLUMNS, False), "false": 0, "kinds": [], "found": None}
    div, coll = ranks.get("divergence"), ranks.get("collectives")
    causes = [c for d in (div or {}).get("diffs", []) for c in d["causes"]]
    kinds = sorted({c["kind"] for c in causes})
    diverging = sorted({r for g in (div or {}).get("groups", [])[1:] for r in g["ranks"]})
    clean = truth["divergent_step"] is None
    wanted = set(truth["kinds"]["expected"]) | set(truth["kinds"]["accepted"])
    false = sum(c["kind"] in truth["forbidden"] for c in causes)
    if clean and div is not None:
        false = max(false, 1)
    cited = {_line_key(s) for c in causes for s in c.get("sources", [])}
    lines = {truth["guilty_line"], *truth.get("accepted_lines", [])} - {None}
    if clean:
        line: bool | str = "n/a"
    elif not cited:
        line = "none cited"
    else:
        line = bool(cited & lines)
    found_hang = coll is not None
    return {
        "name": name,
        "agree": ranks["agree"] == truth["agree"],
        "step": (div or {}).get("step") == truth["divergent_step"],
        "ranks": diverging == sorted(truth["diverging_ranks"]),
        "hang": found_hang == truth["hang"],
        "hang_step": (coll or {}).get("step") == truth["collective_step"],
        "kind": div is None if clean else bool(wanted & set(kinds)),
        "false": false,
        "line": line,
        "kinds": kinds,
        "found": {
            "agree": ranks["agree"],
            "step": (div or {}).get("step"),
            "ranks": diverging,
            "hang_step": (coll or {}).get("step"),
            "lines": sorted(cited),
        },
    }


def total(rows: list[dict]) -> dict:
    n = len(rows)
    out = {c: f"{sum(r[c] is True for r in rows)}/{n}" for c in COLUMNS}
    lined = [r for r in rows if r["line"] != "n/a"]  # a clean run has no line to cite
    out["line"] = f"{sum(r['line'] is True for r in lined)}/{len(lined)}"
    out["false"] = f"{sum(r['false'] > 0 for r in rows)}/{n} scripts"
    out["goal_met"] = sum(r["false"] > 0 for r in rows) * 10 < n
    return out


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    argv = [a for a in argv if a != "--json"]
    which = "heldout"
    if "--set" in argv:
        i = argv.index("--set")
        which, argv = argv[i + 1], argv[:i] + argv[i + 2 :]
    base = SETS[which]
    truth = json.loads((base / "TRUTH.json").read_text())
    names = argv or [k for k in truth if not k.startswith("_")]
    rows = []
    for name in names:
        capture = base / name / "capture"
        if not capture.is_dir():
            raise SystemExit(f"missing {capture}: run fixtures/torch_xla/ranks/generate.py --heldout {name}")
        rows.append(score(name, truth[name], report_json(capture).get("ranks")))
    summary = total(rows)
    if as_json:
        print(json.dumps({"set": which, "rows": rows, "total": summary}, indent=1))
        return 0
    head = f"{'scenario':<14}" + "".join(f"{c:>11}" for c in COLUMNS) + f"{'false':>7}  kinds named"
    print(head)
    for r in rows:
        cells = "".join(f"{r[c]!s:>11}" for c in COLUMNS)
        print(f"{r['name']:<14}{cells}{r['false']:>7}  {', '.join(r['kinds']) or '-'}")
    cells = "".join(f"{summary[c]:>11}" for c in COLUMNS)
    goal = "met" if summary["goal_met"] else "not met"
    print(f"{'total':<14}{cells}  false causes in {summary['false']} (issue 37, under 1 in 10: {goal})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
