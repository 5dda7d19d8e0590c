#!/usr/bin/env python3
"""How long reading StableHLO takes (issue 38), against jaxlib's own MLIR parser and against
reading the HLO text XLA converts the same lowering to.

    python benchmarks/bench_stablehlo.py [--layers 8 32 128]

A program of N unrolled transformer-style layers is lowered by JAX (at run time: nothing stored)
and read four ways, best of 5 (``--runs``) in this process, in wall time (``--cpu``: the process's
CPU time, which other processes' load moves less):

* ``mlir``: jaxlib's C++ MLIR parser (``ir.Module.parse``), the structure only, no IR built;
* ``to_hlo``: xlagraph's StableHLO reader writing the module as HLO text (the compiled core's
  ``stablehlo_to_hlo``, rust/src/parse/stablehlo);
* ``stablehlo``: that and the compiled HLO reader building the IR and canonical form, all of
  ``read_stablehlo``: what ``xlagraph diff a.mlir b.mlir`` pays per side;
* ``x_mlir``: ``stablehlo`` over ``mlir`` (issue 38's goal: at most 2);
* ``hlo``: ``parse_hlo`` of the HLO text XLA writes for the same lowering;
* ``python``: the Python translator the core was ported from (tests/stablehlo_reference, the test
  oracle; run from the repository root), the ``to_hlo`` of before, for comparison.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path


def lowered(layers: int) -> tuple[str, str]:
    import jax
    import jax.numpy as jnp

    def layer(x: jax.Array, w: jax.Array) -> jax.Array:
        h = jax.nn.softmax(jnp.einsum("bd,ed->be", x, w), axis=-1) @ w
        return jax.nn.gelu(h + x) * jax.lax.rsqrt(jnp.mean(h * h, axis=-1, keepdims=True) + 1e-6)

    def model(x: jax.Array, ws: jax.Array) -> jax.Array:
        for k in range(layers):
            x = layer(x, ws[k])
        return x.sum()

    low = jax.jit(model).lower(jnp.ones((8, 64)), jnp.ones((layers, 64, 64)))
    return low.as_text(debug_info=True), low.as_text(dialect="hlo")


def best(f: Callable[[], object], runs: int = 5, clock: Callable[[], float] = time.perf_counter) -> float:
    times = []
    for _ in range(runs):
        start = clock()
        f()
        times.append(clock() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument(
        "--cpu", action="store_true", help="the process's CPU time, not wall time (steadier under load)"
    )
    parser.add_argument("--runs", type=int, default=5, help="best of how many runs (default 5)")
    args = parser.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter

    def timed(f: Callable[[], object]) -> float:
        return best(f, args.runs, clock)
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    from xlagraph.parse.hlo import parse_hlo
    from xlagraph.parse.stablehlo import read_stablehlo, stablehlo_to_hlo

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's tests/
    try:
        from tests.stablehlo_reference import reference_to_hlo
    except ImportError:  # an installed xlagraph without its tests
        reference_to_hlo = None

    context = jax_mlir.make_ir_context()
    names = ("layers", "MB", "instr", "mlir", "to_hlo", "stablehlo", "x_mlir", "hlo", "python")
    widths = (6, 6, 7, 8, 8, 10, 7, 8, 8)
    unit = "CPU seconds" if args.cpu else "seconds"
    print(" ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True)) + f"  ({unit})")
    for n in args.layers:
        mlir, hlo = lowered(n)
        with context:
            t_mlir = timed(lambda text=mlir: ir.Module.parse(text))
        t_to = timed(lambda text=mlir: stablehlo_to_hlo(text))
        t_shlo = timed(lambda text=mlir: read_stablehlo(text))
        t_hlo = timed(lambda text=hlo: parse_hlo(text))
        t_py = timed(lambda text=mlir: reference_to_hlo(text)) if reference_to_hlo else float("nan")
        count = read_stablehlo(mlir).instruction_count
        size = len(mlir) / 1e6
        ratio = t_shlo / t_mlir
        print(
            f"{n:>6} {size:>6.2f} {count:>7} {t_mlir:>8.3f} {t_to:>8.3f} {t_shlo:>10.3f} {ratio:>7.2f}"
            f" {t_hlo:>8.3f} {t_py:>8.3f}"
        )


if __name__ == "__main__":
    main()
