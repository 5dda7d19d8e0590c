"""StableHLO operations no JAX program lowers to, that other printers write (issue 38): read as
XLA's own export writes them. The modules here are hand-written (labelled: JAX gives no real
lowering of these operations) and XLA's conversion of the very same text
(`mlir_module_to_xla_computation`, jaxlib's) is the expected HLO, compared instruction by
instruction as tests/test_stablehlo.py compares the JAX fixtures with their HLO twins.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_stablehlo import EXPORT_REWRITES, called, counts, signatures
from tests.test_stablehlo_core import assert_same
from xlagraph.parse.sources import load_module


def _module(args: str, result: str, body: str) -> str:
    return (
        f"module @m {{\n  func.func public @main({args}) -> ({result}) {{\n{body}\n"
        f"    return %0 : {result}\n  }}\n}}\n"
    )


_REGION = """({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    })"""

# name -> hand-written module (the generic form where the operation has no custom one)
MODULES = {
    "batch_norm_inference": _module(
        "%x: tensor<2x3xf32>, %v: tensor<3xf32>",
        "tensor<2x3xf32>",
        '    %0 = "stablehlo.batch_norm_inference"(%x, %v, %v, %v, %v) <{epsilon = 1.000000e-03 : f32, '
        "feature_index = 1 : i64}> : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, "
        "tensor<3xf32>) -> tensor<2x3xf32>",
    ),
    "batch_norm_training": _module(
        "%x: tensor<2x3xf32>, %v: tensor<3xf32>",
        "tensor<3xf32>",
        '    %t:3 = "stablehlo.batch_norm_training"(%x, %v, %v) <{epsilon = 9.99999974E-6 : f32, '
        "feature_index = 1 : i64}> : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> "
        "(tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)\n"
        "    %0 = stablehlo.add %t#1, %t#2 : tensor<3xf32>",
    ),
    "batch_norm_grad": _module(
        "%x: tensor<2x3xf32>, %v: tensor<3xf32>",
        "tensor<2x3xf32>",
        '    %g:3 = "stablehlo.batch_norm_grad"(%x, %v, %v, %v, %x) <{epsilon = 1.000000e-01 : f32, '
        "feature_index = 1 : i64}> : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, "
        "tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)\n"
        "    %0 = stablehlo.add %g#0, %x : tensor<2x3xf32>",
    ),
    "map": _module(
        "%x: tensor<2x3xf32>",
        "tensor<2x3xf32>",
        f'    %0 = "stablehlo.map"(%x, %x) <{{dimensions = array<i64: 0, 1>}}> {_REGION} : '
        "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>",
    ),
    "create_token": _module(
        "%x: tensor<2x3xf32>", "!stablehlo.token", "    %0 = stablehlo.create_token : !stablehlo.token"
    ),
    "collective_broadcast": _module(
        "%x: tensor<2x3xf32>",
        "tensor<2x3xf32>",
        '    %0 = "stablehlo.collective_broadcast"(%x) <{replica_groups = dense<[[0, 1]]> : '
        "tensor<1x2xi64>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>",
    ),
    "broadcast": _module(
        "%x: tensor<2x3xf32>",
        "tensor<4x5x2x3xf32>",
        "    %0 = stablehlo.broadcast %x, sizes = [4, 5] : (tensor<2x3xf32>) -> tensor<4x5x2x3xf32>",
    ),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_as_xla_converts_the_same_text(name: str, tmp_path: Path) -> None:
    pytest.importorskip("jaxlib")
    from jax._src.lib import _jax

    text = MODULES[name]
    assert assert_same(text, name)[0] == "hlo"  # the core and its reference agree
    xla = _jax.mlir.mlir_module_to_xla_computation(text, use_tuple_args=False, return_tuple=False)
    (tmp_path / "ours.mlir").write_text(text)
    (tmp_path / "xla.hlo").write_text(xla.as_hlo_text())
    ours, theirs = load_module(str(tmp_path / "ours.mlir")), load_module(str(tmp_path / "xla.hlo"))
    assert len(ours.computations) == len(called(ours)) == len(called(theirs))
    a, b = counts(ours), counts(theirs)
    assert {k: v for k, v in a.items() if k not in EXPORT_REWRITES} == {
        k: v for k, v in b.items() if k not in EXPORT_REWRITES
    }  # the export extracts every result of a tuple, the reader those used
    assert signatures(ours) == signatures(theirs)
    opcode = {"create_token": "after-all"}.get(name, name.replace("_", "-"))
    assert counts(ours)[opcode] == 1
