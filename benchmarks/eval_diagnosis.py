#!/usr/bin/env python3
"""How often does `xlagraph report` name the right cause, cite the user's line and give a fix that
applies, on training scripts written the way users write them?

    python benchmarks/eval_diagnosis.py                   # every scenario, table and totals
    python benchmarks/eval_diagnosis.py --split held_out  # only the scenarios never used for tuning
    python benchmarks/eval_diagnosis.py --json            # the same as JSON
    python benchmarks/eval_diagnosis.py --rerun           # regenerate the captures first (torch_xla)

Columns: compiles (distinct graphs in the report; `a!=b` when torch_xla's own CompileTime count b
differs), cause right, line right, fix applies (`-`: does not apply), false causes, and the kinds
named on the scored recompiles (`(i)`: info). `--later` lists, apart from the score, the false
causes on recompiles after the scored one (graph@step:kind).

The corpus is fixtures/torch_xla/corpus/: scripts/, their stored captures/ and MANIFEST.json, whose
"semantics" block defines what is scored (also printed with --semantics). The report is read
through the library (`load_runs`, `build_report`, `report_to_json`), exactly as `xlagraph report
--json` writes it, and read defensively: a kind the engine does not emit simply scores wrong, and an
engine error on one scenario scores that scenario wrong without stopping the others.
"""

from __future__ import annotations

import argparse
import atexit
import fnmatch
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "fixtures" / "torch_xla" / "corpus"
SPLITS = (
    "held_out",
    "held_out_2",
    "held_out_3",
    "held_out_4",
    "held_out_5",
    "held_out_6",
    "held_out_7",
    "held_out_8",
    "held_out_9",
    "held_out_10",
    "held_out_11",
    "held_out_12",
    "held_out_13",
    "held_out_14",
    "held_out_15",
    "held_out_16",
    "held_out_17",
    "held_out_18",
    "held_out_19",
    "held_out_20",
    "held_out_21",
    "held_out_22",
    "held_out_23",
    "held_out_24",
    "held_out_25",
    "held_out_26",
    "held_out_27",
    "held_out_28",
    "held_out_29",
    "held_out_30",
    "held_out_31",
    "held_out_32",
    "held_out_33",
    "held_out_34",
    "held_out_35",
    "held_out_36",
    "held_out_37",
    "held_out_38",
    "held_out_39",
    "held_out_40",
    "held_out_41",
    "held_out_42",
    "held_out_43",
    "held_out_44",
    "held_out_45",
    "held_out_46",
    "held_out_47",
    "held_out_48",
    "held_out_49",
    "held_out_50",
    "tuning",
)
_LINE = re.compile(r"([^\s:()'\"\[\],]+\.py):(\d+)")
_LINE_KEYS = ("sources", "lines", "line", "user_line", "user_lines", "at", "call_site")
_FIX_KEYS = ("hint", "fix")


@dataclass(frozen=True)
class Score:
    """One scenario: the cause, line and fix columns are None when they do not apply."""

    name: str
    split: str
    pattern: str
    compiles: int | None
    compiles_torch_xla: int | None
    recompiles: int
    scored: int
    cause: bool
    line: bool | None
    fix: bool | None
    false_causes: int
    named: str
    error: str = ""
    # Non-info causes outside the entry's kinds on the recompiles after the scored one (bug
    # scenarios scope their score to the first recompile at the bug step; a user reads them all).
    later_false: tuple[str, ...] = ()


def load_manifest(corpus: Path = CORPUS) -> dict[str, Any]:
    return json.loads((corpus / "MANIFEST.json").read_text(encoding="utf-8"))


_TMP: list[Path] = []


def readable_capture(folder: Path) -> Path:
    """The capture folder itself, or a temporary copy with its `.xz` files decompressed."""
    if not any(folder.rglob("*.xz")):
        return folder
    if not _TMP:
        _TMP.append(Path(tempfile.mkdtemp(prefix="xlagraph-eval-")))
        atexit.register(shutil.rmtree, _TMP[0], True)
    dest = _TMP[0] / folder.name
    if not dest.exists():
        shutil.copytree(folder, dest)
        for f in sorted(dest.rglob("*.xz")):
            f.with_suffix("").write_bytes(lzma.decompress(f.read_bytes()))
            f.unlink()
    return dest


def report_json(capture: Path) -> dict[str, Any]:
    """`xlagraph report --json` of one capture folder, through the library."""
    from xlagraph.render.report_json import report_to_json
    from xlagraph.report import build_report, load_runs

    logs = load_runs(str(readable_capture(capture)))
    return report_to_json(tuple(build_report(log) for log in logs))


# ---------------------------------------------------------------------------- defensive readers
def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in _list(v) if isinstance(x, dict)]


def _strings(v: Any) -> Iterable[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, list | tuple):
        for x in v:
            yield from _strings(x)
    elif isinstance(v, dict):
        if isinstance(v.get("file"), str) and isinstance(v.get("line"), int):
            yield f"{v['file']}:{v['line']}"
        else:
            for x in v.values():
                yield from _strings(x)


def cited(texts: Iterable[str]) -> list[tuple[str, int]]:
    """Every `file.py:N` found in the texts, in order."""
    return [(m.group(1), int(m.group(2))) for t in texts for m in _LINE.finditer(t)]


def is_guilty(site: tuple[str, int], guilty: Sequence[str]) -> bool:
    """`site` is one of the guilty `scripts/x.py:N` lines (absolute or relative path)."""
    path, line = site
    for g in guilty:
        g_path, g_line = g.rsplit(":", 1)
        if line == int(g_line) and (path == g_path or path.endswith("/" + g_path)):
            return True
    return False


def _kind(c: dict[str, Any]) -> str:
    return str(c.get("kind", ""))


def _cause_lines(recompile: dict[str, Any], index: int) -> list[tuple[str, int]]:
    cause = _dicts(recompile.get("causes"))[index]
    texts = [s for key in _LINE_KEYS for s in _strings(cause.get(key))]
    for a in _dicts(recompile.get("attribution")):
        if a.get("cause") == index:
            texts += list(_strings(a.get("lines")))
    first = [s for s in _strings(recompile.get("lines"))][:1]
    return cited(texts + first)


def _fix_text(c: dict[str, Any]) -> str:
    return " ".join(s for key in _FIX_KEYS for s in _strings(c.get(key))).lower()


def _fix_applies(text: str, entry: dict[str, Any]) -> bool:
    good = any(k.lower() in text for k in entry["fix_keywords"])
    return good and not any(k.lower() in text for k in entry.get("fix_forbidden", []))


# ------------------------------------------------------------------------------------ scoring
def score(entry: dict[str, Any], report: dict[str, Any] | None, error: str = "") -> Score:
    """Score one scenario against its `xlagraph report --json` (see the manifest's semantics)."""
    recompiles = [r for r in _dicts((report or {}).get("recompiles")) if isinstance(r.get("step"), int)]
    expected = set(entry["expected_kinds"])
    allowed = expected | set(entry.get("accepted_kinds", []))
    forbidden = set(entry.get("forbidden_kinds", []))
    bug = entry.get("bug_step")
    if bug is None:
        warmup, scored = [], recompiles
    else:
        warmup = [r for r in recompiles if r["step"] < bug]
        later = [r for r in recompiles if r["step"] >= bug]
        scored = later if entry.get("scope") == "all" else later[:1]
    false = sum(
        1 for r in warmup for c in _dicts(r.get("causes")) if not c.get("info") and _kind(c) != "state_init"
    )
    # A bug scenario with no recompile at or after bug_step is wrong on every column.
    cause_ok = bool(scored) or bug is None
    needs_line = bool(entry.get("guilty")) and (bug is not None or bool(scored))
    needs_fix = bool(entry["fix_keywords"]) and (bug is not None or bool(scored))
    line_ok: bool | None = bool(scored) if needs_line else None
    fix_ok: bool | None = bool(scored) if needs_fix else None
    named: list[str] = []
    for r in scored:
        causes = _dicts(r.get("causes"))
        live = [c for c in causes if not c.get("info")]
        false += sum(1 for c in live if _kind(c) not in allowed)
        named.append(
            "+".join(sorted({_kind(c) + ("(i)" if c.get("info") else "") for c in causes})) or "none"
        )
        hit = next((i for i, c in enumerate(causes) if _kind(c) in expected), None)
        # A clean loop's recompile is right when it names nothing to fix: an evaluation pass or a
        # metrics read is an info graph of its own, not the warm-up the template expects.
        quiet = bug is None and bool(causes) and not live
        if (hit is None and not quiet) or any(_kind(c) in forbidden for c in live):
            cause_ok = False
        if needs_line:
            sites = _cause_lines(r, hit) if hit is not None else []
            line_ok = bool(line_ok) and any(is_guilty(s, entry["guilty"]) for s in sites)
        if needs_fix:
            fix_ok = bool(fix_ok) and hit is not None and _fix_applies(_fix_text(causes[hit]), entry)
    scored_ids = {id(r) for r in scored}
    rest = [r for r in recompiles if bug is not None and r["step"] >= bug and id(r) not in scored_ids]
    later_false = tuple(
        f"{r.get('variant') or '?'}@{r['step']}:{_kind(c)}"
        for r in rest
        for c in _dicts(r.get("causes"))
        if not c.get("info") and _kind(c) not in allowed
    )
    if error:  # the engine failed: every column that applies is wrong
        cause_ok = False
        line_ok = False if entry.get("guilty") else None
        fix_ok = False if entry["fix_keywords"] else None
    compiles = (report or {}).get("compiles")
    return Score(
        name=entry["name"],
        split=entry["split"],
        pattern=entry["pattern"],
        compiles=compiles if isinstance(compiles, int) else None,
        compiles_torch_xla=entry.get("compiles_torch_xla"),
        recompiles=len(recompiles),
        scored=len(scored),
        cause=cause_ok,
        line=line_ok,
        fix=fix_ok,
        false_causes=false,
        named=", ".join(named) if named else "-",
        error=error,
        later_false=later_false,
    )


def evaluate(entries: Sequence[dict[str, Any]], corpus: Path = CORPUS) -> list[Score]:
    scores = []
    for e in entries:
        try:
            rep, err = report_json(corpus / "captures" / e["name"]), ""
        except Exception as exc:  # one engine failure must not hide the other scenarios' figures
            rep, err = None, f"{type(exc).__name__}: {exc}"[:200]
        scores.append(score(e, rep, err))
    return scores


# ------------------------------------------------------------------------------------- totals
def _frac(values: Iterable[bool | None]) -> tuple[int, int]:
    applicable = [v for v in values if v is not None]
    return sum(applicable), len(applicable)


def totals(scores: Sequence[Score]) -> dict[str, Any]:
    return {
        "scenarios": len(scores),
        "cause": _frac(s.cause for s in scores),
        "line": _frac(s.line for s in scores),
        "fix": _frac(s.fix for s in scores),
        "false_causes": sum(s.false_causes for s in scores),
    }


def grouped(scores: Sequence[Score], key: str) -> dict[str, dict[str, Any]]:
    keys = sorted({getattr(s, key) for s in scores})
    return {k: totals([s for s in scores if getattr(s, key) == k]) for k in keys}


def _mark(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "no")


def _ratio(t: tuple[int, int]) -> str:
    return f"{t[0]}/{t[1]}" if t[1] else "-"


def render(scores: Sequence[Score]) -> str:
    rows = [("scenario", "split", "pattern", "compiles", "cause", "line", "fix", "false", "named")]
    for s in scores:
        comp = (
            f"{s.compiles}" if s.compiles == s.compiles_torch_xla else f"{s.compiles}!={s.compiles_torch_xla}"
        )
        named = s.named if not s.error else f"ERROR {s.error}"
        rows.append(
            (
                s.name,
                s.split,
                s.pattern,
                comp,
                _mark(s.cause),
                _mark(s.line),
                _mark(s.fix),
                str(s.false_causes),
                named,
            )
        )
    out = [_table(rows)]
    for title, key in (("pattern", "pattern"), ("split", "split")):
        trows = [(title, "scenarios", "cause right", "line right", "fix applies", "false causes")]
        for k, t in grouped(scores, key).items():
            trows.append(
                (
                    k,
                    str(t["scenarios"]),
                    *(_ratio(t[c]) for c in ("cause", "line", "fix")),
                    str(t["false_causes"]),
                )
            )
        t = totals(scores)
        trows.append(
            (
                "all",
                str(t["scenarios"]),
                *(_ratio(t[c]) for c in ("cause", "line", "fix")),
                str(t["false_causes"]),
            )
        )
        out.append(_table(trows))
    return "\n\n".join(out) + "\n"


def render_later(scores: Sequence[Score]) -> str:
    """The causes a user also reads after the scored recompile that the entry's kinds do not allow."""
    hits = [(s.name, x) for s in scores for x in s.later_false]
    lines = [f"{name}  {x}" for name, x in hits]
    n = len({name for name, _ in hits})
    return "\nlater recompiles: " + f"{len(hits)} false cause(s) in {n} scenario(s)\n" + "".join(
        f"  {x}\n" for x in lines
    )


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="scenario names or glob patterns (default: all)")
    ap.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    ap.add_argument("--json", action="store_true", help="print JSON instead of tables")
    ap.add_argument("--rerun", action="store_true", help="regenerate the captures first (needs torch_xla)")
    ap.add_argument("--semantics", action="store_true", help="print what is scored, from the manifest")
    ap.add_argument(
        "--later",
        action="store_true",
        help="also list false causes on the recompiles after the scored one (not part of the score)",
    )
    args = ap.parse_args(argv)
    if argv is None and "PYTHONHASHSEED" not in os.environ:
        # Figures must not depend on the interpreter's string-hash seed (the engine's causes did).
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    manifest = load_manifest()
    if args.semantics:
        print(json.dumps(manifest["semantics"], indent=1))
        return 0
    entries = [
        e
        for e in manifest["scenarios"]
        if args.split in ("all", e["split"])
        and (not args.names or any(fnmatch.fnmatch(e["name"], p) for p in args.names))
    ]
    if not entries:
        print(
            f"eval_diagnosis: no scenario matches {args.names or ''} in split {args.split}", file=sys.stderr
        )
        return 2
    if args.rerun:
        cmd = [sys.executable, str(CORPUS / "generate.py"), *(e["name"] for e in entries)]
        if subprocess.run(cmd, check=False).returncode != 0:
            print("eval_diagnosis: generate.py failed", file=sys.stderr)
            return 2
        entries = [e for e in load_manifest()["scenarios"] if e["name"] in {x["name"] for x in entries}]
    scores = evaluate(entries)
    if args.json:
        doc = {
            "scenarios": [asdict(s) for s in scores],
            "by_pattern": grouped(scores, "pattern"),
            "by_split": grouped(scores, "split"),
            "all": totals(scores),
        }
        print(json.dumps(doc, indent=1))
    else:
        print(render(scores), end="")
        if args.later:
            print(render_later(scores), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
