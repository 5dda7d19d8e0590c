"""Metamorphic score over every real module in fixtures/ (issue 19): each transformation of
tests/metamorphic/transforms.py alone and every pair of them, judged by tests/metamorphic/check.py.

    PYTHONPATH=. python benchmarks/metamorphic_score.py [--max-instructions N] [--min-instructions M]
        [--max-bytes B] [--sample K] [--json OUT] [--failures N]

Larger modules (where look-alike layers tie for many rounds), a sample of them:

    PYTHONPATH=. python benchmarks/metamorphic_score.py \
        --min-instructions 401 --max-instructions 6000 --sample 10

Prints, per transformation and per pair: modules passed / judged (n/a: the transformation has
nothing to act on in that module; bad: the module does not diff identical with itself), and the
most common failure reasons.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.metamorphic.check import CASES, corpus, run_case


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-instructions", type=int, default=None)
    ap.add_argument("--min-instructions", type=int, default=0, help="skip smaller modules")
    ap.add_argument("--max-bytes", type=int, default=None, help="skip larger files")
    ap.add_argument("--sample", type=int, default=0, help="every K-th module only")
    ap.add_argument("--json", default="")
    ap.add_argument("--failures", type=int, default=3, help="failure reasons shown per case")
    ap.add_argument("--only", default="", help="comma-separated case names (a+b for a pair)")
    args = ap.parse_args()
    modules = corpus(args.max_instructions, args.max_bytes, args.min_instructions)
    if args.sample > 1:
        modules = modules[:: args.sample]
    cases = CASES
    if args.only:
        keep = set(args.only.split(","))
        cases = tuple(c for c in CASES if "+".join(c) in keep)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    reasons: dict[str, Counter[str]] = defaultdict(Counter)
    failed: dict[str, list[str]] = defaultdict(list)
    t0 = time.perf_counter()
    bad = 0
    for n, (label, text) in enumerate(modules):
        if n and n % 50 == 0:
            done = sum((c["pass"] for c in counts.values()), 0)
            judged = sum((c["pass"] + c["fail"] + c["bad"] for c in counts.values()), 0)
            print(f"... {n}/{len(modules)} modules, {done}/{judged} passed", file=sys.stderr, flush=True)
        self_check = run_case(label, text, ())
        if self_check.status != "pass":
            bad += 1
            continue
        for names in cases:
            key = "+".join(names)
            out = run_case(label, text, names)
            counts[key][out.status] += 1
            if out.status in ("fail", "bad"):
                for p in out.problems:
                    reasons[key][p.split(" [")[0].split(" (")[0][:60]] += 1
                failed[key].append(f"{label}: {'; '.join(out.problems)} [{', '.join(out.kinds)}]")
    elapsed = time.perf_counter() - t0
    print(f"{len(modules)} modules ({bad} do not diff identical with themselves), {elapsed:.0f} s")
    total = Counter()
    print(f"{'case':40s} {'pass':>6s} {'judged':>6s} {'score':>6s} {'n/a':>5s} {'bad':>4s}")
    for names in cases:
        key = "+".join(names)
        c = counts[key]
        judged = c["pass"] + c["fail"] + c["bad"]
        total.update(c)
        score = f"{100 * c['pass'] / judged:5.1f}%" if judged else "  -  "
        print(f"{key:40s} {c['pass']:6d} {judged:6d} {score:>6s} {c['n/a']:5d} {c['bad']:4d}")
        for reason, k in reasons[key].most_common(args.failures):
            print(f"    {k:4d}  {reason}")
    judged = total["pass"] + total["fail"] + total["bad"]
    print(f"{'all':40s} {total['pass']:6d} {judged:6d} {100 * total['pass'] / max(judged, 1):5.1f}%")
    if args.json:
        Path(args.json).write_text(
            json.dumps({k: {"counts": dict(v), "failed": failed[k]} for k, v in counts.items()}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
