#!/usr/bin/env python3
"""Score xlagraph's torch.compile half on the held-out scenarios (fixtures/torch_xla/compiled/heldout,
written without reading the engine; TRUTH.json is their authors' answer).

    python fixtures/torch_xla/compiled/generate.py --heldout   # capture them
    python benchmarks/score_compiled.py                        # score

Per script: the kind named (the first guard of the first unexpected recompile, or a graph break),
the line (any cited line of the recompile or break equals the truth's line or one of its alt_lines),
the recompile and graph-break counts against what TORCH_LOGS printed, and false causes (an
unexpected recompile or a break where the truth has none).
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
}


def score(name: str, truth: dict) -> dict:
    from xlagraph.capture.reader import read_capture
    from xlagraph.report.build import build_report

    report = build_report(read_capture(str(BASE / "heldout_captures" / name / "capture"))[0])
    d = report.dynamo
    unexpected = list(d.unexpected) if d else []
    breaks = list(d.graph_breaks) if d else []
    named = unexpected[0].guards[0].kind if unexpected and unexpected[0].guards else (
        "graph_break" if breaks else "none"
    )
    cited: set[int] = set()
    for e in unexpected:
        for g in e.guards[:1]:
            if g.at:
                cited.add(int(g.at.rsplit(":", 1)[1]))
        if e.call_site:
            cited.add(int(e.call_site.rsplit(":", 1)[1]))
    for b in breaks:
        if b.at:
            cited.add(int(b.at.rsplit(":", 1)[1]))
    lines = {truth["line"], *truth.get("alt_lines", [])} - {None}
    false = (truth["bug_kind"] == "none" and (unexpected or breaks)) or (
        truth["bug_kind"] != "graph_break" and breaks
    )
    return {
        "script": name,
        "truth": truth["bug_kind"],
        "named": named,
        "cause": named in KIND[truth["bug_kind"]],
        "line": (not lines and not cited) or bool(lines & cited),
        "recompiles": f"{len(d.recompiles) if d else 0}/{truth['dynamo_recompiles']}",
        "breaks": f"{len(breaks)}/{truth['graph_breaks']}",
        "false": bool(false),
        "steps": f"{report.steps}/{truth['steps']}",
    }


def main() -> int:
    truth = json.loads((BASE / "heldout" / "TRUTH.json").read_text())
    rows = [score(Path(k).stem, v) for k, v in sorted(truth.items())]
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
