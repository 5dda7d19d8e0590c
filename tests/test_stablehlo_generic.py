"""MLIR's generic operation form and the operations the StableHLO reader refuses (issue 38).

The JAX fixtures (fixtures/jax/stablehlo/) printed by jaxlib's own printer with every operation in
the generic form (`%0 = "stablehlo.add"(%a, %b) : (...) -> ...`, regions over several lines) read
to the instructions of their custom form. A module, function or mesh in the generic form
(`"builtin.module"() <{...}> ({`) is refused by name with its line. Operations without an HLO
counterpart (XLA's own export refuses them too) are refused by name with their line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from xlagraph.cli.main import xlagraph

from tests.test_stablehlo_core import assert_same, core_to_hlo

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "jax" / "stablehlo"
# Fixtures without a Shardy mesh: a module-level `"sdy.mesh"(...)` is refused (test below).
PLAIN = sorted(p.name for p in HERE.glob("*.mlir") if "sdy.mesh" not in p.read_text())


def _print(text: str, generic: bool) -> str:
    pytest.importorskip("jaxlib")
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    with jax_mlir.make_ir_context():
        return ir.Module.parse(text).operation.get_asm(print_generic_op_form=generic)


def _custom_structure(generic: str) -> str:
    """jaxlib's generic print with only the module and its functions written back in the custom
    form (their argument and result attributes dropped), every operation left generic."""
    lines, out, k = generic.split("\n"), [], 0
    while k < len(lines):
        s = lines[k].strip()
        if s.startswith('"builtin.module"('):
            name = re.search(r'sym_name = "([^"]*)"', s)
            out.append(f"module @{name.group(1) if name else 'm'} {{")
        elif s.startswith('"func.func"('):
            name = re.search(r'sym_name = "([^"]*)"', s).group(1)  # type: ignore[union-attr]
            public = 'sym_visibility = "private"' not in s
            ends = r"(?:, (?:res_attrs|sym_name|arg_attrs)|\}>)"
            result = re.search(r"function_type = \(.*?\) -> (.*?)" + ends, s)
            res = result.group(1) if result else "()"  # type: ignore[union-attr]
            block = lines[k + 1].strip()
            args = block[len("^bb0(") : -2] if block.startswith("^bb0(") else ""
            res = res if res.startswith("(") else f"({res})"
            out.append(f"func.func {'public' if public else 'private'} @{name}({args}) -> {res} {{")
            k += 2 if block.startswith("^bb0(") else 1
            continue
        elif s.startswith("})") and s.endswith(": () -> ()"):
            out.append("}")
        else:
            out.append(lines[k])
        k += 1
    return "\n".join(out) + "\n"


def _instructions(hlo: str) -> list[str]:
    """Instruction lines without names, metadata or the module's header, sorted (the generic form
    names a several-result operation's values `%0#1` where the custom form may name each, so the
    results are extracted in another order), less the shardings of parameters and results, which
    `_custom_structure` drops with the functions' attributes."""
    lines = [line.split(", metadata=")[0] for line in hlo.split("\n") if " = " in line]
    lines = [re.sub(r", sharding=.*", "", x) if "parameter(" in x or "ROOT" in x else x for x in lines]
    return sorted(re.sub(r"[\w.\-]+\.\d+", "N", line).strip() for line in lines)


@pytest.mark.parametrize("name", PLAIN)
def test_generic_operations_read_as_custom(name: str) -> None:
    text = (HERE / name).read_text()
    generic = _custom_structure(_print(text, generic=True))
    assert '"stablehlo.' in generic or '"chlo.' in generic or '"func.call"' in generic
    ours = assert_same(generic, name)  # the core and its reference agree
    custom = core_to_hlo(_print(text, generic=False))
    assert ours[0] == custom[0] == "hlo", (ours[:3], custom[:1])
    assert _instructions(ours[1]) == _instructions(custom[1])


def _one_error_line(args: list[str], *must: str) -> str:
    result = CliRunner().invoke(xlagraph, args)
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlagraph: error: "), result.stderr
    for text in must:
        assert text in lines[0], lines[0]
    return lines[0]


def test_generic_module_is_refused_by_name(tmp_path: Path) -> None:
    """A whole module printed generic (`--mlir-print-op-generic`, `print_generic_op_form=True`)."""
    path = tmp_path / "generic.mlir"
    path.write_text(_print((HERE / "mlp.mlir").read_text(), generic=True))
    _one_error_line(["graphs", str(path)], f"{path}:1:", "builtin.module in MLIR's generic form")


def test_generic_function_and_mesh_are_refused_by_name(tmp_path: Path) -> None:
    """A generic `func.func` (hand edit: the module line of a generic print written custom) and a
    generic `sdy.mesh` (a real Shardy fixture with the module and functions written custom)."""
    lines = _print((HERE / "mlp.mlir").read_text(), generic=True).split("\n")
    path = tmp_path / "function.mlir"
    path.write_text("\n".join(["module @m {", *lines[1:]]))
    _one_error_line(["graphs", str(path)], f"{path}:2:", "func.func in MLIR's generic form")
    path = tmp_path / "mesh.mlir"
    path.write_text(_custom_structure(_print((HERE / "shardy_1d.mlir").read_text(), generic=True)))
    _one_error_line(["graphs", str(path)], f"{path}:2:", "sdy.mesh in MLIR's generic form")


# Hand-written (labelled): operations no JAX program lowers to, that XLA's own export refuses
# ("can't be translated to XLA HLO"): quantized types, a slice of run-time sizes.
_NO_HLO = {
    "stablehlo.uniform_quantize": (
        "%0 = stablehlo.uniform_quantize %arg0 : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 1.0:0>>",
        "tensor<4x!quant.uniform<i8:f32, 1.0:0>>",
    ),
    "stablehlo.real_dynamic_slice": (
        "%0 = stablehlo.real_dynamic_slice %arg0, %arg1, %arg1, %arg1 : "
        "(tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xf32>",
        "tensor<2xf32>",
    ),
}


@pytest.mark.parametrize("op", sorted(_NO_HLO))
def test_operations_without_hlo_are_refused_by_name(tmp_path: Path, op: str) -> None:
    body, result = _NO_HLO[op]
    text = (
        f"module @m {{\n  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<1xi64>) -> {result} {{\n"
        f"    {body}\n    return %0 : {result}\n  }}\n}}\n"
    )
    pytest.importorskip("jaxlib")
    from jax._src.lib import _jax

    with pytest.raises(Exception, match="can't be translated to XLA HLO"):
        _jax.mlir.mlir_module_to_xla_computation(text, use_tuple_args=False, return_tuple=False)
    path = tmp_path / "op.mlir"
    path.write_text(text)
    _one_error_line(["graphs", str(path)], f"{path}:3:", op)
