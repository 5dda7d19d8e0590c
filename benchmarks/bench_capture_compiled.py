"""What capture costs in the compiled modes: steady-state step time of real loops, plain vs captured.

Loops (a 2-layer TransformerEncoder, d_model 64, 4 heads, feed-forward 128, batch 8 x 16 tokens,
the model of bench_capture.py):

* `openxla-train`   torch.compile(model, backend="openxla"), loss.backward() and SGD, the user's
                    torch_xla.sync() every step (the bridge's syncs are capture's to tell apart)
* `openxla-infer`   torch.compile(model, backend="openxla") called in an inference loop that never
                    syncs; `.cpu()` of the output each call (capture cuts a step at each call)
* `xla-compile`     torch_xla.compile(step_fn) around forward, backward and SGD
* `eager`           torch_xla.experimental.eager_mode(True), forward, backward and SGD, a sync a step
* `aot_eager`       torch.compile(model, backend="aot_eager") on the CPU, no torch_xla imported
                    (capture keeps dynamo's record only)

Modes: `plain` (no capture), `capture` (XLAGRAPH_CAPTURE=DIR, default settings) and, with
`--warn`, `capture+warn` (XLAGRAPH_ON_RECOMPILE=warn: the helper process follows the capture). Every run is a
fresh interpreter (`--worker LOOP STEPS`), modes interleaved, REPEAT runs each; a run's figure is the
median over steps WARMUP.. of the step time and of the process CPU time per step; the table gives
the median over runs and capture / plain. The budget is capture's: at most 1.10x plain.

    python benchmarks/bench_capture_compiled.py [--repeat 3] [--steps 60] [LOOP ...]

Output: a markdown table on stdout and benchmarks/_results/capture_compiled.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import RESULTS_DIR, environment, markdown_table, write_json

WARMUP = 10
LOOPS = ("openxla-train", "openxla-infer", "xla-compile", "eager", "aot_eager")
BUDGET = 1.10


def _model(device: Any) -> tuple[Any, Any, Any]:
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, batch_first=True, dropout=0.0
    )
    model = nn.TransformerEncoder(layer, num_layers=2).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.01), torch.randn(8, 16, 64).to(device)


def worker(loop: str, steps: int) -> dict[str, Any]:
    import torch

    if loop == "aot_eager":
        model, opt, x = _model("cpu")
        fwd = torch.compile(model, backend="aot_eager")

        def step() -> None:
            opt.zero_grad()
            fwd(x).pow(2).mean().backward()
            opt.step()

        return _timed(step, steps)
    import torch_xla

    if loop == "eager":
        import torch_xla.experimental

        torch_xla.experimental.eager_mode(True)
    device = torch_xla.device()
    model, opt, x = _model(device)
    if loop in ("openxla-train", "openxla-infer"):
        fwd = torch.compile(model, backend="openxla")
        if loop == "openxla-infer":
            model.eval()

            def step() -> None:
                with torch.no_grad():
                    fwd(x).cpu()

            return _timed(step, steps)

        def step() -> None:
            opt.zero_grad()
            fwd(x).pow(2).mean().backward()
            opt.step()
            torch_xla.sync()

        return _timed(step, steps, torch_xla)
    if loop == "xla-compile":

        def step_fn() -> None:
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()

        compiled = torch_xla.compile(step_fn)
        return _timed(compiled, steps, torch_xla)

    def step() -> None:  # eager
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        torch_xla.sync()

    return _timed(step, steps, torch_xla)


def _timed(step: Any, steps: int, torch_xla: Any = None) -> dict[str, Any]:
    wall, cpu = [], []
    for _ in range(steps):
        t, c = time.perf_counter(), time.process_time()
        step()
        if torch_xla is not None:
            import torch_xla.core.xla_model as xm

            xm.wait_device_ops()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return {
        "wall_ms": statistics.median(wall[WARMUP:]) * 1e3,
        "cpu_ms": statistics.median(cpu[WARMUP:]) * 1e3,
    }


def _run(loop: str, steps: int, capture: bool, warn: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XLAGRAPH_", "PT_XLA_DEBUG", "XLA_"))}
        env.setdefault("PJRT_DEVICE", "CPU")
        if capture:
            env["XLAGRAPH_CAPTURE"] = os.path.join(tmp, "capture")
        if warn:
            env["XLAGRAPH_ON_RECOMPILE"] = "warn"
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", loop, str(steps)],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        if proc.returncode != 0:
            raise SystemExit(f"{loop} ({'capture' if capture else 'plain'}) failed:\n{proc.stderr[-2000:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        if capture:
            result["disk_kb"] = (
                sum(f.stat().st_size for f in Path(tmp, "capture").rglob("*") if f.is_file()) / 1e3
            )
        return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--worker", nargs=2, metavar=("LOOP", "STEPS"))
    ap.add_argument("--warn", action="store_true", help="also measure XLAGRAPH_ON_RECOMPILE=warn")
    ap.add_argument("loops", nargs="*", default=list(LOOPS))
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], int(args.worker[1]))))
        return
    modes = ["plain", "capture", *(["capture+warn"] if args.warn else [])]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {loop: {m: [] for m in modes} for loop in args.loops}
    for _ in range(args.repeat):
        for loop in args.loops:
            for mode in modes:
                runs[loop][mode].append(_run(loop, args.steps, mode != "plain", mode == "capture+warn"))
    rows, out = [], {}
    for loop, by_mode in runs.items():
        med = {
            m: {k: statistics.median(r[k] for r in rs) for k in ("wall_ms", "cpu_ms")}
            for m, rs in by_mode.items()
        }
        out[loop] = {"median": med, "runs": by_mode}
        for m in modes[1:]:
            wall = med[m]["wall_ms"] / med["plain"]["wall_ms"]
            cpu = med[m]["cpu_ms"] / med["plain"]["cpu_ms"]
            disk = statistics.median(r["disk_kb"] for r in by_mode[m])
            out[loop][m] = {"wall_ratio": wall, "cpu_ratio": cpu, "disk_kb": disk}
            rows.append(
                [
                    loop,
                    m,
                    f"{med['plain']['wall_ms']:.2f}",
                    f"{med[m]['wall_ms']:.2f}",
                    f"x{wall:.3f}",
                    f"x{cpu:.3f}",
                    f"{disk:.0f} kB",
                    "yes" if wall <= BUDGET else "no",
                ]
            )
    header = ["loop", "mode", "plain ms/step", "ms/step", "wall x plain", "CPU x plain", "disk"]
    header.append(f"<= x{BUDGET}")
    print(markdown_table(header, rows))
    write_json(
        RESULTS_DIR / "capture_compiled.json",
        {"environment": environment(), "steps": args.steps, "repeat": args.repeat, "loops": out},
    )


if __name__ == "__main__":
    main()
