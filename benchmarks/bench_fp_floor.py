"""What torch_xla itself charges for one more graph a step, with no xlagraph in the process.

Issue 20 asks fingerprints to cost at most 5% of `bench_capture.py`'s step, computed in a graph of
their own after the step's sync. This measures the floor of any such design: the same loop
(`bench_capture.build_model`, plain torch_xla, no capture, no debug variables) in blocks of BLOCK
steps that rotate between

* plain        the training step and its `torch_xla.sync()`;
* one sum      and after it a second graph that sums one parameter (a graph launch, no real work);
* every tensor and after it a second graph that sums every parameter, every gradient and the batch
               once each (49 tensors on the small model, the tensors xlagraph fingerprints; float
               sums, which are no fingerprint: the least work any graph reading them all does).

Process CPU (all threads: tracing, XLA's execution) per step, medians over the blocks of each kind
and over REPEAT fresh processes; ratios against plain. Compare with
`bench_capture.py --alternate` (fingerprints on/off under capture) run beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import RESULTS_DIR, environment, write_json
from bench_capture import MODELS, _env, build_model

BLOCK, WARMUP = 10, 10
KINDS = ("plain", "one sum", "every tensor")


def worker(blocks: int, model_name: str) -> dict[str, list[float]]:
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm

    model, optimizer, x = build_model(model_name)
    params = list(model.parameters())

    def step(kind: str) -> None:
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
        torch_xla.sync()
        if kind == "one sum":
            extra = params[0].sum()
        elif kind == "every tensor":
            extra = torch.stack([t.sum() for t in (x, *params, *(p.grad for p in params))])
        else:
            return
        torch_xla.sync()
        del extra

    for _ in range(WARMUP):  # every kind compiles its graphs before anything is timed
        for kind in KINDS:
            step(kind)
    xm.wait_device_ops()
    out: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for b in range(blocks * len(KINDS)):
        kind = KINDS[b % len(KINDS)]
        step(kind)  # the switch's own step is not timed
        xm.wait_device_ops()
        started = time.process_time()
        for _ in range(BLOCK):
            step(kind)
        xm.wait_device_ops()
        out[kind].append((time.process_time() - started) / BLOCK)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--blocks", type=int, default=30, help="blocks of each kind per process")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes")
    parser.add_argument("--model", choices=sorted(MODELS), default="small")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.blocks, args.model)))
        return
    runs: list[dict[str, list[float]]] = []
    for i in range(args.repeat):
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", "--blocks", str(args.blocks), "--model", args.model],
            env=_env({}, ""),
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        plain = statistics.median(runs[-1]["plain"])
        ratios = ", ".join(f"{k} x{statistics.median(runs[-1][k]) / plain:.3f}" for k in KINDS[1:])
        print(f"  process {i + 1}/{args.repeat}: plain {plain * 1e3:.2f} ms/step; {ratios}", flush=True)
    medians = {k: statistics.median(v for run in runs for v in run[k]) for k in KINDS}
    load = os.getloadavg()
    lines = [
        f"torch_xla alone, one more graph a step ({args.model} model, {args.repeat} processes x "
        f"{args.blocks} blocks of {BLOCK} steps per kind), process CPU per step:",
        *(f"  {k:<13} {medians[k] * 1e3:6.2f} ms   x{medians[k] / medians['plain']:.3f}" for k in KINDS),
        f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    name = "fp_floor" + ("" if args.model == "small" else f"_{args.model}")
    write_json(RESULTS_DIR / f"{name}.json", {"runs": runs, "medians": medians, "environment": environment()})
    (RESULTS_DIR / f"{name}.md").write_text(text)


if __name__ == "__main__":
    main()
