"""What capture costs: steady-state step time of a real torch_xla training loop on CPU, and disk use.

Two figures per mode: the wall-clock step time (what the user sees; noisy when other processes
share the machine) and the CPU time of the training thread per step (the Python/lazy-tensor
tracing side, where capture and XLA_IR_DEBUG add their cost; steadier under contention).

A 2-layer TransformerEncoder (d_model 64, 4 heads, feed-forward 128, batch 8 x 16 tokens) trained
with SGD, `torch_xla.sync()` every step, STEPS steps of which the first WARMUP are excluded (they
compile). Every run is a fresh interpreter (`python bench_capture.py --worker train ...`), modes
interleaved, REPEAT runs each; the figure is the median over runs of each run's median step time.
On a shared machine the median moves with the neighbours' load; the 10th percentile of a run's
steps (the steps nobody preempted) moves much less: both are printed, with their ratios.

Modes:
* plain                       no capture, no debug variables
* source lines only           XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1, no capture: what the source lines cost alone
* capture                     XLAGRAPH_CAPTURE=DIR (default XLAGRAPH_SOURCE_LINES=auto: source lines
                              until the run is steady, then off until the next compile)
* capture, source lines always  XLAGRAPH_CAPTURE=DIR XLAGRAPH_SOURCE_LINES=always (every step traced
                              with XLA_IR_DEBUG, the default before auto)
* capture, no source lines    XLAGRAPH_CAPTURE=DIR XLAGRAPH_SOURCE_LINES=0
* capture + on-recompile warn  XLAGRAPH_CAPTURE=DIR XLAGRAPH_ON_RECOMPILE=warn (the helper process follows)
* capture + on-recompile raise  the same with raise (the helper also writes how far it has read)
* capture, uncompressed      XLAGRAPH_CAPTURE=DIR XLAGRAPH_COMPRESS=0 (dumps kept as plain text; the
                              default stores them as .xz at exit: its cost is the exit CPU column)
* capture + fingerprints      XLAGRAPH_CAPTURE=DIR XLAGRAPH_FINGERPRINTS=1 (bit fingerprints of the
                              batch, gradients and parameters every step, in a graph of their own);
                              its cost is read against "capture", its disk use per tensor and step
* XLA_SAVE_TENSORS_FILE       XLA_SAVE_TENSORS_FILE=F XLA_SAVE_TENSORS_FMT=hlo (what users do today)

Fingerprints against capture alone, directly (`--alternate`): one process runs the same loop
under XLAGRAPH_CAPTURE + XLAGRAPH_FINGERPRINTS=1 and switches the fingerprints off and on in
alternating blocks of BLOCK steps (their hooks removed and the recorder's side call dropped, as
if never armed; the fingerprint graph stays compiled). Both halves share the process, its warm
caches and the neighbours' load of the same seconds, so their ratio (process CPU per step, and
the median step time) is the cost of fingerprints itself, with a spread from the block pairs.
Fresh processes per mode (above) add the run-to-run spread of a shared machine (+-30% here).
`--model large` runs the same on a 4-layer encoder (d_model 256, 8 heads, feed-forward 1024,
batch 8 x 32 tokens, 3.2M parameters, ~90 ms steps here): closer to a real training step, where
the fingerprints' fixed cost (one more graph launch a step) is a smaller share. `--launch-only`
swaps the fingerprint computation for one that writes zeros (same inputs and table, no work; the
fingerprints written are then wrong): the cost of launching a second graph a step at all.

Disk: a tiny stable loop (an 8x8 matmul chain) captured for 10 and for 1,000 steps.

A late graph (default mode): the same loop with a short batch at steps LATE (the first compiles
once the run is steady, without source lines; the second reruns it): which steps were traced with
source lines, what capture's hook took at each step where it lowered the live tensors, and whether
the late graph's lines were recovered.

Output: a markdown table on stdout, benchmarks/_results/capture.json and capture.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import RESULTS_DIR, environment, markdown_table, write_json

STEPS, WARMUP = 160, 10
LATE = (25, 45)
BLOCK = 10  # --alternate: steps per block, fingerprints on and off in turn
# --model: (d_model, heads, feed-forward, layers, batch, tokens) of the TransformerEncoder trained
MODELS = {"small": (64, 4, 128, 2, 8, 16), "large": (256, 8, 1024, 4, 8, 32)}


def build_model(name: str) -> tuple[Any, Any, Any]:
    """(model, SGD optimizer, input batch) of `MODELS[name]` on the XLA device, seeded."""
    import torch
    import torch.nn as nn
    import torch_xla

    d_model, heads, ff, layers, batch, tokens = MODELS[name]
    torch.manual_seed(0)
    device = torch_xla.device()
    layer = nn.TransformerEncoderLayer(
        d_model=d_model, nhead=heads, dim_feedforward=ff, batch_first=True, dropout=0.0
    )
    model = nn.TransformerEncoder(layer, num_layers=layers).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    return model, optimizer, torch.randn(batch, tokens, d_model).to(device)


MODES = {
    "plain": {},
    "source lines only": {"XLA_IR_DEBUG": "1", "XLA_HLO_DEBUG": "1"},
    "capture": {"XLAGRAPH_CAPTURE": "{tmp}/capture"},
    "capture, source lines always": {"XLAGRAPH_CAPTURE": "{tmp}/capture", "XLAGRAPH_SOURCE_LINES": "always"},
    "capture, no source lines": {"XLAGRAPH_CAPTURE": "{tmp}/capture", "XLAGRAPH_SOURCE_LINES": "0"},
    "capture + on-recompile warn": {"XLAGRAPH_CAPTURE": "{tmp}/capture", "XLAGRAPH_ON_RECOMPILE": "warn"},
    "capture + on-recompile raise": {"XLAGRAPH_CAPTURE": "{tmp}/capture", "XLAGRAPH_ON_RECOMPILE": "raise"},
    "capture, uncompressed": {"XLAGRAPH_CAPTURE": "{tmp}/capture", "XLAGRAPH_COMPRESS": "0"},
    "capture + fingerprints": {"XLAGRAPH_CAPTURE": "{tmp}/capture", "XLAGRAPH_FINGERPRINTS": "1"},
    "XLA_SAVE_TENSORS_FILE (hlo)": {"XLA_SAVE_TENSORS_FILE": "{tmp}/save.hlo", "XLA_SAVE_TENSORS_FMT": "hlo"},
}
BASELINE = "capture + fingerprints (baseline)"


# -- worker side (a fresh interpreter per measurement) --------------------------------------------


def worker_train(steps: int, late: tuple[int, ...] = ()) -> dict[str, Any]:
    import torch
    import torch.nn as nn
    import torch_xla
    import torch_xla.core.xla_model as xm

    torch.manual_seed(0)
    device = torch_xla.device()
    layer = nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, batch_first=True, dropout=0.0
    )
    model = nn.TransformerEncoder(layer, num_layers=2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(8, 16, 64).to(device)
    short = x[:7].clone()
    times, cpu, proc = [], [], []
    steady_from = 0.0
    for step in range(steps):
        t, c, pc = time.perf_counter(), time.thread_time(), time.process_time()
        if step == WARMUP:
            steady_from = pc
        optimizer.zero_grad()
        if step in late:
            model(short).pow(2).mean().backward()
        else:
            model(x).pow(2).mean().backward()
        optimizer.step()
        torch_xla.sync()
        times.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
        proc.append(time.process_time() - pc)
    xm.wait_device_ops()
    # All threads' CPU (tracing, XLA's execution, capture's own) from the first steady step to the
    # last execution's end, per step: what the process spent, whatever the neighbours' load. The
    # process's CPU so far: what the driver's count of the whole process adds is the exit
    # (capture's finish: the last records, stored sources, compression).
    steady_cpu = (time.process_time() - steady_from) / max(1, steps - WARMUP)
    return {
        "step_seconds": times,
        "thread_cpu_seconds": cpu,
        "process_cpu_seconds": proc,
        "process_cpu_per_steady_step": steady_cpu,
        "process_cpu_total_seconds": time.process_time(),
    }


def worker_alternate(blocks: int, model_name: str = "small", launch_only: bool = False) -> dict[str, Any]:
    """Fingerprints off and on in alternating blocks of BLOCK steps, in one process (see the
    module docstring); per block: process CPU, main-thread CPU and wall time per step."""
    import torch_xla
    import torch_xla.core.xla_model as xm

    from xlagraph.capture import _fingerprint_capture

    cap = _fingerprint_capture.current()
    rec = cap.rec if cap is not None else None
    if rec is None:
        raise SystemExit("--alternate needs XLAGRAPH_CAPTURE and XLAGRAPH_FINGERPRINTS=1")
    if launch_only:
        from xlagraph.capture import _fingerprint_lower

        def zeros(*params: Any) -> Any:  # the same inputs and (N, 5) table, no work
            import torch_xla.core.xla_builder as xb

            return xb.Op.zero(params[0].builder(), xb.Type.S64).broadcast([len(params), 5])

        _fingerprint_lower._table = zeros

    def switch(on: bool) -> None:
        if on:
            cap.install()
            cap.active = True
            rec.side = cap
        else:
            cap.uninstall()
            rec.side = None

    model, optimizer, x = build_model(model_name)

    def step() -> None:
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
        torch_xla.sync()

    for _ in range(WARMUP):
        step()
    xm.wait_device_ops()
    out: dict[str, list[float]] = {
        "on_cpu": [],
        "off_cpu": [],
        "on_thread": [],
        "off_thread": [],
        "on_wall": [],
        "off_wall": [],
    }
    for b in range(2 * blocks):
        on = b % 2 == 1  # off, on, off, on...: each on block follows an off one
        switch(on)
        name = "on" if on else "off"
        step()  # the switch's own step is not timed
        t, c, pc = time.perf_counter(), time.thread_time(), time.process_time()
        for _ in range(BLOCK):
            step()
        xm.wait_device_ops()
        out[f"{name}_cpu"].append((time.process_time() - pc) / BLOCK)
        out[f"{name}_thread"].append((time.thread_time() - c) / BLOCK)
        out[f"{name}_wall"].append((time.perf_counter() - t) / BLOCK)
    switch(True)
    return out


def worker_tiny(steps: int) -> dict[str, Any]:
    import torch
    import torch_xla

    device = torch_xla.device()
    w = torch.ones(8, 8).to(device)
    for _ in range(steps):
        w = torch.tanh(w @ w * 0.1 + 1)
        torch_xla.sync()
    return {"steps": steps}


# -- driver ----------------------------------------------------------------------------------------


def _env(extra: dict[str, str], tmp: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XLAGRAPH_", "PT_XLA_DEBUG", "_XLAGRAPH", "XLA_SAVE_TENSORS"))
        and k not in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "XLA_FLAGS")
    }
    env["PJRT_DEVICE"] = "CPU"
    env.update({k: v.format(tmp=tmp) for k, v in extra.items()})
    return env


def _worker(
    kind: str,
    steps: int,
    extra: dict[str, str],
    tmp: str,
    timeout: float,
    late: tuple[int, ...] = (),
    options: tuple[str, ...] = (),
) -> dict[str, Any]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--worker",
            kind,
            "--steps",
            str(steps),
            "--late",
            ",".join(map(str, late)),
            *options,
        ],
        env=_env(extra, tmp),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"worker {kind} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if "process_cpu_total_seconds" in result:  # the workers run one at a time: the delta is this one's
        result["exit_cpu_seconds"] = max(0.0, total - result["process_cpu_total_seconds"])
    return result


def _du(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _capture_parts(directory: Path) -> dict[str, int]:
    (proc,) = [p for p in directory.iterdir() if (p / "journal.jsonl").exists()]
    return {
        "journal": _du(proc / "journal.jsonl"),
        "meta": _du(proc / "meta.json"),
        "hlo": _du(proc / "hlo"),
        "tensors": _du(proc / "tensors"),
        "total": _du(proc),
    }


def _hook_overhead(directory: Path) -> dict[str, Any]:
    """From the journal: capture's own time per steady step ("ov") and the live-tensor reports."""
    (journal,) = directory.glob("*/journal.jsonl")
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    steps = [r for r in records if r.get("k") == "step"]
    end = next((r for r in records if r.get("k") == "end"), {})
    steady = [r.get("ov", 0.0) for r in steps[WARMUP:]]
    return {
        "hook_ms_per_steady_step": round(statistics.median(steady) * 1e3, 4) if steady else None,
        "tensor_reports_seconds": end.get("report_seconds"),
        "tensor_reports_kept": sum(1 for r in records if r.get("k") == "graph" and r.get("tensors")),
    }


def _fingerprint_size(directory: Path) -> dict[str, Any]:
    """Bytes of the fingerprint files, and per tensor and step (30-byte records plus a 30-byte
    header a step)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from xlagraph.diverge import load_fingerprints

    runs = load_fingerprints(directory)
    size = sum((Path(r.path) / "fingerprints.bin").stat().st_size for r in runs)
    records = sum(len(s.values) for r in runs for s in r.steps)
    steps = sum(len(r.steps) for r in runs)
    return {
        "bin_bytes": size,
        "steps": steps,
        "tensors_per_step": round(records / max(1, steps), 1),
        "bytes_per_tensor_step": round(size / max(1, records), 2),
    }


def _p10(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[0]


def measure(
    repeat: int, timeout: float, modes: tuple[str, ...] = (), steps: int = STEPS, baseline: str = ""
) -> dict[str, Any]:
    chosen = {m: e for m, e in MODES.items() if not modes or m in modes}
    if baseline:  # the same fingerprint run with another checkout's xlagraph (`--baseline DIR`)
        chosen[BASELINE] = {**MODES["capture + fingerprints"], "PYTHONPATH": baseline}
    runs: dict[str, list[float]] = {m: [] for m in chosen}
    proc: dict[str, list[float]] = {m: [] for m in chosen}
    cpu: dict[str, list[float]] = {m: [] for m in chosen}
    fast: dict[str, list[float]] = {m: [] for m in chosen}
    fast_cpu: dict[str, list[float]] = {m: [] for m in chosen}
    exit_cpu: dict[str, list[float]] = {m: [] for m in chosen}
    extras: dict[str, Any] = {}
    for r in range(repeat):
        for mode, extra in chosen.items():
            with tempfile.TemporaryDirectory(prefix="xlagraph-bench-") as tmp:
                result = _worker("train", steps, extra, tmp, timeout)
                steady = result["step_seconds"][WARMUP:]
                runs[mode].append(statistics.median(steady))
                proc[mode].append(result["process_cpu_per_steady_step"])
                cpu[mode].append(statistics.median(result["thread_cpu_seconds"][WARMUP:]))
                fast[mode].append(_p10(steady))
                fast_cpu[mode].append(_p10(result["thread_cpu_seconds"][WARMUP:]))
                exit_cpu[mode].append(result["exit_cpu_seconds"])
                if r == 0 and "XLAGRAPH_CAPTURE" in extra:
                    extras[mode] = {"size_bytes": _capture_parts(Path(tmp) / "capture")}
                    extras[mode].update(_hook_overhead(Path(tmp) / "capture"))
                    if "XLAGRAPH_FINGERPRINTS" in extra:
                        extras[mode]["fingerprints"] = _fingerprint_size(Path(tmp) / "capture")
                if r == 0 and "XLA_SAVE_TENSORS_FILE" in extra:
                    extras[mode] = {"size_bytes": {"total": sum(_du(p) for p in Path(tmp).glob("save.hlo*"))}}
            print(
                f"  run {r + 1}/{repeat} {mode}: {runs[mode][-1] * 1e3:.2f} ms/step, "
                f"process CPU {proc[mode][-1] * 1e3:.2f} ms/step (load {os.getloadavg()[0]:.1f})",
                file=sys.stderr,
            )
    for mode in (m for m in ("capture + fingerprints", BASELINE) if m in runs and "capture" in runs):
        # Process CPU (all threads) against capture alone, run by run (A B A B: neighbours in time)
        pairs = [a / b for a, b in zip(proc[mode], proc["capture"], strict=True)]
        extras.setdefault(mode, {}).update(
            process_cpu_ratio_to_capture=round(
                statistics.median(proc[mode]) / statistics.median(proc["capture"]), 3
            ),
            process_cpu_ratio_pairs=[round(v, 3) for v in pairs],
        )
    plain = statistics.median(runs["plain"]) if "plain" in runs else None
    if "capture" in runs and "capture + fingerprints" in runs:  # what fingerprints add to capture
        with_fp, without = (
            statistics.median(runs["capture + fingerprints"]),
            statistics.median(runs["capture"]),
        )
        p10_with, p10_without = (
            statistics.median(fast["capture + fingerprints"]),
            statistics.median(fast["capture"]),
        )
        extras.setdefault("capture + fingerprints", {}).update(
            ratio_to_capture=round(with_fp / without, 3),
            p10_ratio_to_capture=round(p10_with / p10_without, 3),
        )
    base = runs["plain"] if plain is not None else None
    ratio = lambda v, ref: round(v / statistics.median(ref), 3) if ref else None  # noqa: E731
    out = {}
    for mode, values in runs.items():
        median = statistics.median(values)
        median_cpu = statistics.median(cpu[mode])
        p10, p10_cpu = statistics.median(fast[mode]), statistics.median(fast_cpu[mode])
        out[mode] = {
            "median_step_ms": round(median * 1e3, 3),
            "ratio_to_plain": ratio(median, base),
            "runs_ms": [round(v * 1e3, 3) for v in values],
            "process_cpu_ms_per_step": round(statistics.median(proc[mode]) * 1e3, 3),
            "process_cpu_runs_ms": [round(v * 1e3, 3) for v in proc[mode]],
            "median_main_thread_cpu_ms": round(median_cpu * 1e3, 3),
            "cpu_ratio_to_plain": ratio(median_cpu, base and cpu["plain"]),
            "p10_step_ms": round(p10 * 1e3, 3),
            "p10_ratio_to_plain": ratio(p10, base and fast["plain"]),
            "p10_main_thread_cpu_ms": round(p10_cpu * 1e3, 3),
            "p10_cpu_ratio_to_plain": ratio(p10_cpu, base and fast_cpu["plain"]),
            "exit_cpu_ms": round(statistics.median(exit_cpu[mode]) * 1e3, 1),
            "exit_cpu_runs_ms": [round(v * 1e3, 1) for v in exit_cpu[mode]],
            **extras.get(mode, {}),
        }
    return out


def measure_alternate(
    repeat: int, blocks: int, timeout: float, baseline: str = "", options: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`repeat` processes of `worker_alternate`: fingerprints' cost against capture alone. With
    `baseline` (another checkout, PYTHONPATH=DIR), each is followed by one of that checkout's."""
    checkouts = {"this checkout": ""}
    if baseline:
        checkouts[f"baseline {baseline}"] = baseline
    runs: dict[str, dict[str, list[float]]] = {name: {} for name in checkouts}
    for r in range(repeat):
        for name, path in checkouts.items():
            with tempfile.TemporaryDirectory(prefix="xlagraph-bench-") as tmp:
                extra = dict(MODES["capture + fingerprints"])
                if path:
                    extra["PYTHONPATH"] = path
                result = _worker("alternate", blocks, extra, tmp, timeout, options=options)
            result["pairs"] = [a / b for a, b in zip(result["on_cpu"], result["off_cpu"], strict=True)]
            for key, values in result.items():
                runs[name].setdefault(key, []).extend(values)
            off, on = (statistics.median(result[k]) * 1e3 for k in ("off_cpu", "on_cpu"))
            print(
                f"  alternate run {r + 1}/{repeat}, {name}: process CPU "
                f"x{sum(result['on_cpu']) / sum(result['off_cpu']):.3f} with fingerprints "
                f"({off:.2f} -> {on:.2f} ms/step, load {os.getloadavg()[0]:.1f})",
                file=sys.stderr,
            )
    return {name: _summary(values, repeat, blocks) for name, values in runs.items()}


def _summary(blocks: dict[str, list[float]], repeat: int, nblocks: int) -> dict[str, Any]:
    def both(key: str) -> dict[str, float]:  # medians in ms: without and with fingerprints
        return {
            "capture": round(statistics.median(blocks[f"off_{key}"]) * 1e3, 3),
            "capture + fingerprints": round(statistics.median(blocks[f"on_{key}"]) * 1e3, 3),
        }

    pairs = blocks["pairs"]
    quartiles = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else [pairs[0]] * 3
    return {
        "blocks": nblocks,
        "block_steps": BLOCK,
        "repeat": repeat,
        "process_cpu_ms": both("cpu"),
        "main_thread_cpu_ms": both("thread"),
        "median_step_ms": both("wall"),
        "process_cpu_ratio": round(sum(blocks["on_cpu"]) / sum(blocks["off_cpu"]), 4),
        "process_cpu_ratio_block_pairs": {
            "median": round(quartiles[1], 4),
            "quartiles": [round(quartiles[0], 4), round(quartiles[2], 4)],
            "pairs": len(pairs),
        },
        "step_time_ratio": round(
            statistics.median(blocks["on_wall"]) / statistics.median(blocks["off_wall"]), 4
        ),
    }


def render_alternate(checkouts: dict[str, Any]) -> str:
    fp = "capture + fingerprints"
    lines = []
    for name, alt in checkouts.items():
        pairs = alt["process_cpu_ratio_block_pairs"]
        cpu, wall, thread = alt["process_cpu_ms"], alt["median_step_ms"], alt["main_thread_cpu_ms"]
        low, high = pairs["quartiles"]
        lines.append(
            f"{name}: fingerprints on/off in one process ({alt['repeat']} processes x {alt['blocks']} "
            f"block pairs of {alt['block_steps']} steps): process CPU {cpu['capture']:.3f} -> "
            f"{cpu[fp]:.3f} ms/step, "
            f"x{alt['process_cpu_ratio']:.3f} (block pairs: median x{pairs['median']:.3f}, quartiles "
            f"x{low:.3f} to x{high:.3f}); main thread {thread['capture']:.3f} -> {thread[fp]:.3f} ms/step; "
            f"median step {wall['capture']:.2f} -> {wall[fp]:.2f} ms, x{alt['step_time_ratio']:.3f}"
        )
    return "\n" + "\n\n".join(lines) + "\n"


def measure_size(timeout: float) -> dict[str, Any]:
    out = {}
    for steps in (10, 1000):
        with tempfile.TemporaryDirectory(prefix="xlagraph-bench-") as tmp:
            _worker("tiny", steps, {"XLAGRAPH_CAPTURE": "{tmp}/capture"}, tmp, timeout)
            out[str(steps)] = _capture_parts(Path(tmp) / "capture")
    out["journal_bytes_per_extra_step"] = round((out["1000"]["journal"] - out["10"]["journal"]) / 990, 1)
    return out


def measure_late(timeout: float) -> dict[str, Any]:
    """One run of the default capture with a short batch at LATE: see the module docstring."""
    with tempfile.TemporaryDirectory(prefix="xlagraph-bench-") as tmp:
        extra = {"XLAGRAPH_CAPTURE": "{tmp}/capture"}
        times = _worker("train", STEPS, extra, tmp, timeout, LATE)["step_seconds"]
        (journal,) = (Path(tmp) / "capture").glob("*/journal.jsonl")
        records = [json.loads(line) for line in journal.read_text().splitlines()]
    graphs: dict[int, dict[str, Any]] = {}
    for r in records:
        if r.get("k") == "graph":
            graphs.setdefault(r["id"], {}).update(r)
    (late,) = [g for g in graphs.values() if g.get("step") == LATE[0]] or [{}]
    steps = {r["i"]: r for r in records if r.get("k") == "step"}
    hook = {i: round(r.get("ov", 0.0) * 1e3, 1) for i, r in steps.items() if r.get("ov", 0.0) > 0.02}
    return {
        "late_steps": list(LATE),
        "late_graph_compiled_without_lines": bool(late.get("lines_off")),
        "lines_recovered_at_step": late.get("lines_step"),
        "instructions_given_lines": late.get("lines_count"),
        "hook_ms_over_20ms_by_step": hook,
        "step_ms_at": {i: round(times[i] * 1e3, 1) for i in sorted({*LATE, LATE[0] + 1, LATE[1] - 1})},
        "steady_step_ms": round(statistics.median(times[WARMUP : LATE[0]]) * 1e3, 2),
        "waiting_step_ms": round(statistics.median(times[LATE[0] + 2 : LATE[1]]) * 1e3, 2),
        "after_step_ms": round(statistics.median(times[LATE[1] + 1 :]) * 1e3, 2),
    }


def _x(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.3f}"


def render(modes: dict[str, Any], size: dict[str, Any] | None) -> str:
    rows = []
    for mode, m in modes.items():
        disk = m.get("size_bytes", {}).get("total")
        hlo = m.get("size_bytes", {}).get("hlo")
        hook = m.get("hook_ms_per_steady_step")
        rows.append(
            [
                mode,
                f"{m['median_step_ms']:.2f}",
                _x(m["ratio_to_plain"]),
                f"{m['process_cpu_ms_per_step']:.2f}",
                f"{m['median_main_thread_cpu_ms']:.2f}",
                _x(m["cpu_ratio_to_plain"]),
                f"{m['p10_step_ms']:.2f}",
                _x(m["p10_ratio_to_plain"]),
                _x(m["p10_cpu_ratio_to_plain"]),
                "" if hook is None else f"{hook:.3f}",
                f"{m['exit_cpu_ms']:.0f}",
                "" if disk is None else f"{disk / 1e6:.2f} MB",
                "" if hlo is None else f"{hlo / 1e3:.0f} kB",
            ]
        )
    table = markdown_table(
        [
            "mode",
            f"median step (ms, steps {WARMUP}-{STEPS - 1})",
            "x plain",
            "process CPU (ms/step)",
            "main-thread CPU (ms/step)",
            "x plain",
            "p10 step (ms)",
            "x plain",
            "p10 CPU x plain",
            "capture hook (ms/step)",
            "exit CPU (ms)",
            f"disk ({STEPS} steps)",
            "of which HLO",
        ],
        rows,
    )
    for name in ("capture + fingerprints", BASELINE):
        fp = modes.get(name, {})
        if "process_cpu_ratio_to_capture" in fp:
            size_fp = fp.get("fingerprints", {})
            pairs = fp["process_cpu_ratio_pairs"]
            table += (
                f"\n\n{name}: process CPU x{fp['process_cpu_ratio_to_capture']:.3f} of capture alone "
                f"(medians; run by run x{min(pairs):.3f} to x{max(pairs):.3f}, median "
                f"x{statistics.median(pairs):.3f})"
            )
            if "ratio_to_capture" in fp:
                table += (
                    f"; wall step time x{fp['ratio_to_capture']:.3f} (median), "
                    f"x{fp['p10_ratio_to_capture']:.3f} (p10)"
                )
            if size_fp:
                table += (
                    f"; {size_fp.get('tensors_per_step')} tensors a step, "
                    f"{size_fp.get('bytes_per_tensor_step')} bytes per tensor and step on disk"
                )
    if size is None:
        return f"{table}\n"
    size_rows = [
        [
            steps,
            f"{p['total'] / 1e3:.1f}",
            f"{p['journal'] / 1e3:.1f}",
            f"{p['hlo'] / 1e3:.1f}",
            f"{p['tensors'] / 1e3:.1f}",
            f"{p['meta'] / 1e3:.1f}",
        ]
        for steps, p in ((k, size[k]) for k in ("10", "1000"))
    ]
    size_table = markdown_table(
        ["steps", "total kB", "journal kB", "hlo kB", "tensors kB", "meta kB"], size_rows
    )
    return (
        f"{table}\n\nCapture size of a stable loop (one graph):\n\n{size_table}\n\n"
        f"journal: {size['journal_bytes_per_extra_step']} bytes per extra step\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", choices=("train", "tiny", "alternate"))
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--modes", default="", help="modes to time, separated by ';' (default: all)")
    parser.add_argument("--steady-only", action="store_true", help="skip the disk and late-graph runs")
    parser.add_argument(
        "--baseline", default="", help="another checkout: its fingerprints timed too (PYTHONPATH=DIR)"
    )
    parser.add_argument(
        "--alternate",
        type=int,
        default=0,
        metavar="BLOCKS",
        help="fingerprints off and on in BLOCKS block pairs in one process, --repeat processes (only this)",
    )
    parser.add_argument(
        "--model", choices=sorted(MODELS), default="small", help="--alternate: the model trained (see above)"
    )
    parser.add_argument(
        "--launch-only",
        action="store_true",
        help="--alternate: a fingerprint graph that writes zeros (the cost of a second launch alone)",
    )
    parser.add_argument("--late", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        late = tuple(int(s) for s in args.late.split(",") if s)
        if args.worker == "train":
            result = worker_train(args.steps, late)
        elif args.worker == "alternate":
            result = worker_alternate(args.steps, args.model, args.launch_only)
        else:
            result = worker_tiny(args.steps)
        print(json.dumps(result))
        return
    if args.alternate:
        started = time.time()
        # (none for the default: a baseline checkout older than these options still runs)
        options = (*(("--model", args.model) if args.model != "small" else ()),)
        options += ("--launch-only",) if args.launch_only else ()
        alt = measure_alternate(args.repeat, args.alternate, args.timeout, args.baseline, options)
        load = os.getloadavg()
        text = render_alternate(alt)
        text += (
            f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)\n"
        )
        print(text)
        payload = {
            "benchmark": "capture, fingerprints on/off" + (", launch only" if args.launch_only else ""),
            "model": "TransformerEncoder (d_model, heads, ff, layers, batch, tokens) = "
            f"{MODELS[args.model]}, SGD; CPU ({args.model})",
            "alternate": alt,
            "environment": environment(),
            "seconds": round(time.time() - started, 1),
        }
        name = "capture_alternate" + ("" if args.model == "small" else f"_{args.model}")
        name += "_launch_only" if args.launch_only else ""
        write_json(RESULTS_DIR / f"{name}.json", payload)
        (RESULTS_DIR / f"{name}.md").write_text(text)
        return
    started = time.time()
    chosen = tuple(m.strip() for m in args.modes.split(";") if m.strip())
    modes = measure(args.repeat, args.timeout, chosen, args.steps, args.baseline)
    if args.steady_only:
        size, late = {}, {}
        text = render(modes, None)
    else:
        size = measure_size(args.timeout)
        late = measure_late(args.timeout)
        text = render(modes, size)
        text += (
            f"\nA late graph (default capture, short batch at steps {LATE}):\n{json.dumps(late, indent=1)}\n"
        )
    load = os.getloadavg()
    text += f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)\n"
    print(text)
    payload = {
        "benchmark": "capture",
        "model": "TransformerEncoder 2 layers, d_model 64, 4 heads, ff 128, batch 8x16, SGD; CPU",
        "steps": args.steps,
        "warmup_excluded": WARMUP,
        "repeat": args.repeat,
        "modes": modes,
        "stable_loop_size": size,
        "late_graph": late,
        "environment": environment(),
        "seconds": round(time.time() - started, 1),
    }
    write_json(RESULTS_DIR / "capture.json", payload)
    (RESULTS_DIR / "capture.md").write_text(text)


if __name__ == "__main__":
    main()
