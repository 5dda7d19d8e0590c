#!/usr/bin/env python3
"""Score xlagraph's torch.compile half on the held-out scenarios (fixtures/torch_xla/compiled/heldout,
written without reading the engine; TRUTH.json is their authors' answer).

    python fixtures/torch_xla/compiled/generate.py --heldout   # capture them
    python benchmarks/score_compiled.py                        # score
    python benchmarks/score_compiled.py --set heldout2         # the second blind round (heldout2/)
    python benchmarks/score_compiled.py --set heldout3         # the third blind round (heldout3/)
    python benchmarks/score_compiled.py --set heldout4         # the fourth blind round (heldout4/)
    python benchmarks/score_compiled.py --set heldout5         # the fifth blind round (heldout5/)

Per script: the kind named (the first guard of the first unexpected recompile, or a graph break),
the line (any cited line of the recompile or break equals the truth's line or one of its alt_lines),
the recompile and graph-break counts against what TORCH_LOGS printed, and false causes (an
unexpected recompile or a break where the truth has none).

A `torch_xla.compile` script (or any run without torch.compile's record) has no guard to name: it
is scored by the XLA report's causes instead (`XLA_KIND`). A Python value the step reads on the
host (truth "global", "module_attribute", "python_scalar") shows in the graphs as the work of one
branch of an `if` replaced by another's (`conditional_work`) or as a constant that changed
(`constant_value`); it counts as named when such a cause of an unexpected recompile cites the
truth's line or one of its alt lines, and its cited lines count for the line score. (Added after
heldout3's first run, whose recorded score in heldout3/FIRST_RUN.txt stands as it was.) After
heldout4's first run (its FIRST_RUN.txt stands as it was): a train/eval switch without dynamo shows
as dropout's work in one graph only (`conditional_work`), and a script with two causes on different
steps (truth's `also`) names its first cause when any unexpected recompile or break names it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "fixtures" / "torch_xla" / "compiled"
KIND = {  # the truth's words -> xlagraph's kinds that say the same
    "tensor_shape": {"tensor_size", "tensor_rank"},
    "python_scalar": {"python_scalar"},
    "module_attribute": {"module_attribute", "train_eval"},
    "global": {"global_value"},
    "graph_break": {"graph_break"},
    "none": {"none"},
    "train_eval": {"train_eval"},
    "dtype": {"tensor_dtype"},
    "eager_shape": {"eager_shape"},
}
XLA_KIND = {  # without torch.compile's record: the truth's words -> the XLA report's cause kinds
    "global": {"conditional_work", "constant_value"},
    "module_attribute": {"conditional_work", "constant_value"},
    "python_scalar": {"conditional_work", "constant_value"},
    "train_eval": {"conditional_work"},  # dropout's random ops in one mode's graph only
}


def score(name: str, truth: dict, captures: str = "heldout_captures") -> dict:
    from xlagraph.capture.reader import read_capture
    from xlagraph.report.build import build_report

    report = build_report(read_capture(str(BASE / captures / name / "capture"))[0])
    d = report.dynamo
    unexpected = list(d.unexpected) if d else []
    breaks = list(d.graph_breaks) if d else []
    named = unexpected[0].guards[0].kind if unexpected and unexpected[0].guards else (
        "graph_break" if breaks else "none"
    )
    cited: set[int] = set()
    for e in unexpected:
        for g in e.guards[:1]:
            for loc in (g.at, g.origin):
                if loc:
                    cited.add(int(loc.rsplit(":", 1)[1]))
        if e.call_site:
            cited.add(int(e.call_site.rsplit(":", 1)[1]))
    for b in breaks:
        if b.at:
            cited.add(int(b.at.rsplit(":", 1)[1]))
    eager = report.eager.steps if report.eager is not None else ()
    if named == "none" and any(s.recompiled for s in eager):  # eager mode: ops compiled again
        named = "eager_shape"
    for s in eager:
        cited.update(int(loc.rsplit(":", 1)[1]) for loc in s.at)
    lines = {truth["line"], *truth.get("alt_lines", [])} - {None}
    xla = [r for r in report.recompiles if not r.expected]  # the XLA half: a graph to fix
    if d is None and named == "none":  # no guard to name: the XLA report's causes (XLA_KIND)
        for a in (a for r in xla for a in r.attribution if a.kind in XLA_KIND.get(truth["bug_kind"], ())):
            at = {int(loc.rsplit(":", 1)[1]) for loc in a.lines if loc.rsplit(":", 1)[1].isdigit()}
            if at & lines:
                named = a.kind
                cited |= at
                break
    # Two causes on different steps (truth's `also`): which comes first in the report is no answer;
    # the truth's first cause is named when any unexpected recompile's first guard or a break names it.
    if truth.get("also") and named not in KIND[truth["bug_kind"]]:
        kinds = {e.guards[0].kind for e in unexpected if e.guards} | ({"graph_break"} if breaks else set())
        named = next((k for k in sorted(kinds) if k in KIND[truth["bug_kind"]]), named)
    anything = unexpected or breaks or xla or any(s.recompiled for s in eager)
    false = (truth["bug_kind"] == "none" and anything) or (
        truth["bug_kind"] != "graph_break" and breaks
    )
    return {
        "script": name,
        "truth": truth["bug_kind"],
        "named": named,
        "cause": named in KIND[truth["bug_kind"]]
        or (d is None and named in XLA_KIND.get(truth["bug_kind"], ())),
        "line": (not lines and not cited) or bool(lines & cited),
        "recompiles": f"{len(d.recompiles) if d else 0}/{truth['dynamo_recompiles']}",
        "breaks": f"{len(breaks)}/{truth['graph_breaks']}",
        "false": bool(false),
        "steps": f"{report.steps}/{truth['steps']}",
    }


def main() -> int:
    held = sys.argv[sys.argv.index("--set") + 1] if "--set" in sys.argv else "heldout"
    truth = json.loads((BASE / held / "TRUTH.json").read_text())
    rows = [score(Path(k).stem, v, f"{held}_captures") for k, v in sorted(truth.items())]
    for r in rows:
        print("  ".join(f"{k}={v}" for k, v in r.items()))
    n = len(rows)
    print(
        f"causes {sum(r['cause'] for r in rows)}/{n}, lines {sum(r['line'] for r in rows)}/{n}, "
        f"false {sum(r['false'] for r in rows)}/{n}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
