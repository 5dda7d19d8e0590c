"""What one fingerprint graph costs, alone: process and calling-thread CPU per call, by lowering.

The loop of `bench_capture.py --alternate` gives fingerprints' whole cost per step, with a noise
(+-7% of the step) larger than a change to the fingerprint computation. This isolates the graph:
one process (torch_xla 2.9 on CPU, `PJRT_DEVICE=CPU`, no capture) trains the benchmark's model a
few steps, takes the tensors a step fingerprints (the batch, the gradients, the parameters), and
dispatches the fingerprint computation on them in each lowering in turn, ROUNDS rounds of CALLS
calls each (as capture does: eager mode for the call, the tables fetched 32 at a time):

* four reduces  every tensor alone, its four sums as four reductions (the first round's lowering)
* per tensor     every tensor alone (`_fingerprint_lower._STACK_MAX = 0`), its four sums in one reduce
* stacked small  the default: tensors of up to 4096 elements stacked by dtype and size
* stacked all    every tensor stacked with the others of its dtype and size
* zeros          a computation of the same inputs that writes the (N, 5) table of zeros: the
                 cost of launching a graph at all
* one pass       (`--jax`, benchmark only) the per-tensor layout with the four sums in JAX's
                 own variadic reduce (float32 tensors only), lowered to HLO and loaded as
                 torch_xla's `call_jax` does: a cross-check of the reduce `_fingerprint_reduce` writes by
                 hand (capture never imports JAX: it would switch on JAX's x64 mode in the
                 user's process)

Every lowering's integer fields are checked equal to the four-reduce one's first.

    python benchmarks/bench_fp_graph.py [--model small|large] [--rounds 4] [--calls 300] [--jax]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_capture import MODELS, build_model

LOWERINGS = {"four reduces": -2, "per tensor": 0, "stacked small": None, "stacked all": 1 << 62, "zeros": -1}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", choices=sorted(MODELS), default="small")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--jax", action="store_true", help="also the one-pass lowering built with JAX")
    args = parser.parse_args()
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm

    from xlagraph.capture import _fingerprint_lower

    model, optimizer, x = build_model(args.model)
    for _ in range(3):
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
        torch_xla.sync()
    xm.wait_device_ops()
    tensors = [x] + [p.grad for p in model.parameters()] + list(model.parameters())
    xlac = torch_xla._XLAC
    default_max = _fingerprint_lower._STACK_MAX
    computations = {
        name: _build(_fingerprint_lower, tensors, default_max if m is None else m)
        for name, m in LOWERINGS.items()
    }
    if args.jax:
        computations["one pass (JAX)"] = _one_pass(_fingerprint_lower, tensors)

    def run(name: str) -> Any:
        xlac._set_use_eager_mode(True)
        try:
            (table,) = xlac._xla_user_computation(_fingerprint_lower.OP_NAME, tensors, computations[name])
        finally:
            xlac._set_use_eager_mode(False)
        return table

    reference = run("four reduces").cpu()
    same_norm = {}
    for name in computations:
        table = run(name).cpu()  # (compiled here, before the timing)
        if name == "zeros":
            continue
        if not torch.equal(table[:, :4], reference[:, :4]):
            raise SystemExit(f"{name}: integer fields differ from the four-reduce lowering")
        same_norm[name] = torch.equal(table[:, 4], reference[:, 4])  # may move in its last bits
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in computations}
    for _ in range(args.rounds):
        for name in computations:
            tables: list[Any] = []
            xm.wait_device_ops()
            thread, process = time.thread_time(), time.process_time()
            for _ in range(args.calls):
                tables.append(run(name))
                if len(tables) == 32:
                    xlac._xla_get_cpu_tensors(tables)
                    tables = []
            xm.wait_device_ops()
            times[name].append(
                ((time.process_time() - process) / args.calls, (time.thread_time() - thread) / args.calls)
            )
    n = sum(t.numel() for t in tensors)
    print(
        f"{args.model} model: {len(tensors)} tensors, {n} elements; {args.rounds} rounds x {args.calls} calls"
    )
    print(
        "| lowering | process CPU per graph (us): median, range | calling thread (us) | norms bit for bit |"
    )
    print("|---|---|---|---|")
    for name, values in times.items():
        proc = [p * 1e6 for p, _ in values]
        thread = [t * 1e6 for _, t in values]
        print(
            f"| {name} | {statistics.median(proc):.0f}, {min(proc):.0f}-{max(proc):.0f} | "
            f"{statistics.median(thread):.0f} | {_yes(same_norm.get(name))} |"
        )
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")


def _build(lower: Any, tensors: list[Any], stack_max: int) -> Any:
    """The computation with tensors up to `stack_max` elements stacked (-1: one writing zeros;
    -2: each tensor alone, four reduces)."""
    import torch_xla.core.xla_builder as xb

    shapes = xb.tensor_shape(list(tensors))
    if stack_max == -1:
        return xb.create_computation("zeros", _zeros, shapes)
    saved = lower._STACK_MAX, lower.ONE_PASS
    lower._STACK_MAX, lower.ONE_PASS = max(stack_max, 0), stack_max != -2
    try:
        return xb.create_computation("xlagraph_fingerprint", lower._table, shapes)
    finally:
        lower._STACK_MAX, lower.ONE_PASS = saved


def _one_pass(lower: Any, tensors: list[Any]) -> Any:
    """The per-tensor fields of `_fingerprint_lower` with the four sums in one variadic reduce (JAX)."""
    import jax
    import jax.numpy as jnp
    import torch_xla.core.xla_builder as xb
    from jax import lax

    jax.config.update("jax_enable_x64", True)
    split = 1 << 32

    def row(x: Any) -> Any:
        n = x.size
        dims = lower.block_dims(n)
        size = lower._numel(dims)
        flat = x.reshape(n)
        block = (jnp.pad(flat, (0, size - n)) if size != n else flat).reshape(dims)
        bits = lax.bitcast_convert_type(block, jnp.int32).astype(jnp.int64)
        positions = jnp.ones(dims, jnp.int64)
        stride = 1
        for axis in reversed(range(len(dims))):
            positions = positions + lax.broadcasted_iota(jnp.int64, dims, axis) * stride
            stride *= dims[axis]
        special = (block != block).astype(jnp.int64) + (jnp.maximum(block, -block) == jnp.inf).astype(
            jnp.int64
        ) * split
        squares = (block * block).astype(jnp.float64)
        zero = jnp.int64(0)
        s, w, sp, sq = lax.reduce(
            (bits, bits * positions, special, squares),
            (zero, zero, zero, jnp.float64(0)),
            lambda a, b: tuple(u + v for u, v in zip(a, b, strict=True)),
            tuple(range(len(dims))),
        )
        norm = lax.bitcast_convert_type(jnp.sqrt(sq.astype(jnp.float32)), jnp.int32).astype(jnp.int64)
        return jnp.stack([s, w, sp, norm])

    def table(*xs: Any) -> Any:
        t = jnp.stack([row(x) for x in xs])
        special = t[:, 2:3]
        inf = special // split
        return jnp.concatenate([t[:, 0:2], special - inf * split, inf, t[:, 3:4]], axis=1)

    if any(str(t.dtype) != "torch.float32" for t in tensors):
        raise SystemExit("--jax: float32 tensors only")
    specs = [jax.ShapeDtypeStruct(tuple(t.shape), jnp.float32) for t in tensors]
    hlo = jax.jit(table, keep_unused=True).lower(*specs).compiler_ir("hlo")
    return xb.computation_from_module_proto("one_pass", hlo.as_serialized_hlo_module_proto())


def _yes(value: bool | None) -> str:
    return "" if value is None else "yes" if value else "no"


def _zeros(*params: Any) -> Any:
    import torch_xla.core.xla_builder as xb

    return xb.Op.zero(params[0].builder(), xb.Type.S64).broadcast([len(params), 5])


if __name__ == "__main__":
    main()
