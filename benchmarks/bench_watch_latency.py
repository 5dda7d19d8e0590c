"""How soon `xlagraph watch` tells a recompile while the run is going (issue 36: within 2 s).

A real torch_xla training loop (the 2-layer TransformerEncoder of bench_capture.py, lazy mode,
SGD, a sync a step) runs under capture; its token count changes at a few steps after the warm-up,
so each of those compiles a graph. `xlagraph watch --json DIR` follows the capture from another
process, as a user would in a second terminal; each line is timestamped on arrival. A recompile's
latency is its arrival minus the end of the step that compiled it (the journal's `t1` of that
step, on the run's own clock: meta.json's start time + seconds since capture began), so it holds
the compile's own tail too and is an upper bound on "after its compile".

    python benchmarks/bench_watch_latency.py [--repeat 3] [--steps 80] [--interval 0.5] [--layers 2]

Output: a markdown table on stdout and benchmarks/_results/watch_latency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import RESULTS_DIR, environment, markdown_table, write_json

GOAL_S = 2.0
CHANGES = (30, 50, 65)  # loop steps whose token count differs, each another size (a graph each)

LOOP = """
import sys, time
import torch, torch.nn as nn, torch_xla
steps, changes, layers = int(sys.argv[1]), [int(x) for x in sys.argv[2].split(",")], int(sys.argv[3])
dev = torch_xla.device()
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True, dropout=0.0)
model = nn.TransformerEncoder(layer, num_layers=layers).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
torch_xla.sync()
for step in range(steps):
    tokens = 16 + 4 * (changes.index(step) + 1) if step in changes else 16  # a new size each time
    x = torch.randn(8, tokens, 64).to(dev)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch_xla.sync()
    time.sleep(0.05)  # the rest of a real step (data, logging): the run goes on while watch reads
"""


def one_run(steps: int, interval: float, layers: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        cap, script = Path(tmp) / "cap", Path(tmp) / "loop.py"
        script.write_text(LOOP)
        env = {**os.environ, "PJRT_DEVICE": "CPU", "XLAGRAPH_CAPTURE": str(cap)}
        cap_arg = str(cap)
        argv = [sys.executable, str(script), str(steps), ",".join(map(str, CHANGES)), str(layers)]
        run = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not cap.is_dir() and run.poll() is None:
            time.sleep(0.02)
        watch_env = {k: v for k, v in os.environ.items() if not k.startswith("XLAGRAPH_")}
        watcher = subprocess.Popen(
            [sys.executable, "-m", "xlagraph.cli.main", "watch", "--json", f"--interval={interval}", cap_arg],
            env=watch_env,
            stdout=subprocess.PIPE,
            text=True,
        )
        arrivals: list[tuple[float, dict[str, Any]]] = []

        def read() -> None:
            assert watcher.stdout is not None
            for line in watcher.stdout:
                arrivals.append((time.time(), json.loads(line)))

        reader = threading.Thread(target=read)
        reader.start()
        run.wait(timeout=600)
        watcher.wait(timeout=120)
        reader.join()
        (proc,) = [p for p in cap.iterdir() if p.is_dir()]
        meta = json.loads((proc / "meta.json").read_text())
        ends = {}
        for line in (proc / "journal.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record.get("k") == "step":
                ends[record["i"]] = meta["start_time"] + record["t1"]
        told = [(at, e) for at, e in arrivals if e["event"] == "recompile" and not e["expected"]]
        return [at - ends[e["step"]] for at, e in told]  # (the report's step is the journal's here)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--interval", type=float, default=0.5, help="watch --interval (its default: 0.5)")
    ap.add_argument("--layers", type=int, default=2, help="encoder layers: the graph's size")
    args = ap.parse_args()
    latencies: list[float] = []
    told = 0
    for _ in range(args.repeat):
        got = one_run(args.steps, args.interval, args.layers)
        told += len(got)
        latencies += got
    expected = args.repeat * len(CHANGES)
    rows = [
        ["recompiles told / made", f"{told} / {expected}"],
        ["median latency (s)", f"{statistics.median(latencies):.2f}" if latencies else "-"],
        ["max latency (s)", f"{max(latencies):.2f}" if latencies else "-"],
        ["goal (s)", f"{GOAL_S:.1f}"],
    ]
    print(markdown_table(["watch --json, following a live run", "value"], rows))
    result = {"latencies_s": latencies, "told": told, "expected": expected, "interval": args.interval}
    result["layers"] = args.layers
    write_json(RESULTS_DIR / "watch_latency.json", {"environment": environment(), **result})


if __name__ == "__main__":
    main()
