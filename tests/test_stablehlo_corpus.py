"""The StableHLO corpus (fixtures/stablehlo_corpus): real StableHLO text from public repositories,
held to the reference parser's counts (jaxlib's MLIR bindings, in MANIFEST.json; issue 38).

Each module (a file, or one part of a file split at `// -----` as its RUN line consumes it) is
either read with instruction counts that follow exactly from MLIR's operation counts (COUNTS), or
refused in one line naming the file, the line and the construct, for one of REFUSALS' reasons.
Every module MLIR itself refuses is refused. `xlagraph graphs` reads every readable module.
The hand-written modules at the end (labelled) pin the reader fixes this corpus led to.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from xlagraph.cli.main import xlagraph

from xlagraph.errors import InputError
from xlagraph.ir import Module
from xlagraph.parse.stablehlo import read_stablehlo

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "stablehlo_corpus"
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text())
FILES = {f["file"]: f for f in MANIFEST["files"]}
SPLIT = "\n// -----\n"

# Why a module is refused: the refusal's text (after `file:line: `) and the reason. Every refusal
# matches exactly one; test_tally holds how many of each.
REFUSALS: dict[str, tuple[str, str]] = {
    "test-only dialect": (
        r"^operation (check|interpreter)\.\w+ is not read",
        "openxla/stablehlo's interpreter tests assert with `check.*` and run `interpreter.*`: "
        "no program XLA compiles holds them (MLIR itself refuses `check` without its dialect)",
    ),
    "two operations on a line": (
        r"its return shares a line with",
        "openxla/xla's translate test writes `func.return` after an add on one line",
    ),
    "dynamic dimensions": (
        r"dynamic or bounded dimensions",
        "shape-polymorphic exports (`tensor<?xf32>`): HLO's shapes are static",
    ),
    "custom_call with called computations": (
        r"^custom_call with called computations is not read",
        "the TPU ApproxTopK custom call with a comparator",
    ),
    "all_to_all of two dimensions": (
        r"^all_to_all with split_dimension != concat_dimension is not read",
        "the interpreter tests' all_to_all splitting one dimension and concatenating another "
        "(HLO's array all-to-all has one dimension)",
    ),
    "no entry function": (
        r"^no @main and not one public function",
        "a test file of several unrelated public functions",
    ),
}
TALLY = {
    "test-only dialect": 44,
    "two operations on a line": 1,
    "dynamic dimensions": 6,
    "custom_call with called computations": 2,
    "all_to_all of two dimensions": 4,
    "no entry function": 4,
}
READ = 144  # with stablehlo.fft and stablehlo.triangular_solve's two, read since issue 38's ops


def _modules() -> list[tuple[str, int]]:
    return [(f["file"], k) for f in MANIFEST["files"] for k in range(len(f["modules"]))]


MODULES = _modules()


def _text(name: str, k: int) -> str:
    text = (CORPUS / "modules" / name).read_text()
    return text.split(SPLIT)[k] if FILES[name]["split"] else text


def _read(name: str, k: int) -> Module | InputError:
    try:
        return read_stablehlo(_text(name, k), name, first_line=FILES[name]["modules"][k]["line"])
    except InputError as e:
        return e


def _reason(e: InputError) -> str:
    got = [key for key, (pattern, _) in REFUSALS.items() if re.search(pattern, e.message)]
    assert len(got) == 1, (str(e), got)
    return got[0]


def expected_counts(funcs: dict[str, Any]) -> dict[str, int]:
    """The instructions the translation writes for a module of these MLIR counts (per function,
    summed): every operation is one instruction but the returns (`func.return`,
    `stablehlo.return`: a computation's root is the returned value) and a broadcast_in_dim that
    takes a size-1 dimension to a larger one, which is a reshape and a broadcast; beside those,
    - parameters: one per function argument and block argument, but a while's cond and body take
      one tuple each, and each case/if branch one (the values it reads from outside);
    - get-tuple-element: MLIR's own, one per used result of an operation of several results (a
      while's always: it carries one tuple), one per element of a while region's tuple parameter
      (its block arguments and the values the loop reads from outside), and one per value a
      case/if branch reads from outside where it reads several (passed in as one tuple);
    - tuple: MLIR's own, one per return of other than one value, one per while (its initial
      state) and per while body's return (always a tuple), one per case/if branch reading other
      than one value from outside.
    - Shardy's result shardings: one custom call per sharded result of a function, and a tuple
      and its get-tuple-element where the function has that one result (as XLA's export writes);
    - Shardy's manual computation (`shard_map`): the operation and its `sdy.return` are three
      instructions (GlobalToLocalShape, the body's call, LocalToGlobalShape), a get-tuple-element
      per operand and per result where there are several (`manual_tupled`), and the body's root
      a tuple of several results (a return of other than one value, as above).
    `other` is every instruction but those three opcodes."""
    t: Counter[str] = Counter()
    for f in funcs.values():
        t.update({k: v for k, v in f.items() if isinstance(v, int)})
        t.update(f["by_name"])
    whiles = t["stablehlo.while"]
    gte, tup = t["stablehlo.get_tuple_element"], t["stablehlo.tuple"]
    return {
        "other": t["ops"]
        - t["func.return"]
        - t["stablehlo.return"]
        - t["sdy.return"]
        + 2 * t["sdy.manual_computation"]  # one operation, three instructions
        + t["expanding_broadcasts"]
        - gte
        - tup
        + t["sdy_result_shardings"],
        "parameter": t["block_args"] - t["while_region_args"] + 2 * whiles + t["branch_regions"],
        "get-tuple-element": gte
        + t["multi_result_used"]
        + t["while_region_args"]
        + 2 * t["while_free"]
        + t["branch_tupled_free"]
        + t["manual_tupled"]
        + t["sdy_single_result"],
        "tuple": tup + t["tuple_returns"] + whiles + t["branch_tuples"] + t["sdy_single_result"],
    }


def actual_counts(module: Module) -> dict[str, int]:
    got = Counter(i.opcode for c in module.computations for i in c.instructions)
    structural = ("parameter", "get-tuple-element", "tuple")
    return {"other": sum(got.values()) - sum(got[k] for k in structural)} | {k: got[k] for k in structural}


def test_corpus_is_whole() -> None:
    files = {p.relative_to(CORPUS / "modules").as_posix() for p in (CORPUS / "modules").rglob("*.mlir")}
    assert files == set(FILES)
    for name, entry in FILES.items():
        data = (CORPUS / "modules" / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        assert len(data) < 200_000, name
        source = entry["source"]
        assert source["repo"] and source["path"] and source["license"], name
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), name
        assert len(entry["modules"]) == (data.decode().count(SPLIT) + 1 if entry["split"] else 1), name
    assert str(ROOT) not in (CORPUS / "MANIFEST.json").read_text()  # no path of this checkout


def test_manifest_is_current() -> None:
    """MANIFEST.json is what make_manifest.py writes from the stored files with today's jaxlib:
    the counts and verdicts, not the version line (a newer jaxlib that counts the same passes)."""
    pytest.importorskip("jax")
    spec = importlib.util.spec_from_file_location("stablehlo_corpus_manifest", CORPUS / "make_manifest.py")
    assert spec is not None and spec.loader is not None
    make = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = make
    spec.loader.exec_module(make)
    fresh, stored = dict(make.manifest()), dict(MANIFEST)
    fresh.pop("reference"), stored.pop("reference")
    assert fresh == stored, "run python fixtures/stablehlo_corpus/make_manifest.py"


@pytest.mark.parametrize(("name", "k"), MODULES, ids=[f"{n}#{k}" for n, k in MODULES])
def test_module(name: str, k: int) -> None:
    """Read with the counts MLIR's imply, or refused in one line for a listed reason."""
    mlir = FILES[name]["modules"][k]["mlir"]
    got = _read(name, k)
    if isinstance(got, InputError):
        assert got.path == name and got.line >= FILES[name]["modules"][k]["line"], str(got)
        assert "\n" not in str(got) and str(got).startswith(f"{name}:{got.line}: ")
        _reason(got)
        return
    assert mlir["accepted"], f"MLIR refuses it ({mlir['error']}), xlagraph read it"
    assert actual_counts(got) == expected_counts(mlir["funcs"])


def test_tally() -> None:
    """How many modules are read and how many refused for each reason."""
    results = [_read(n, k) for n, k in MODULES]
    refused = Counter(_reason(r) for r in results if isinstance(r, InputError))
    assert sum(1 for r in results if not isinstance(r, InputError)) == READ
    assert dict(refused) == TALLY
    assert set(TALLY) == set(REFUSALS)
    sources = Counter(FILES[n]["source"]["repo"] for n, _ in MODULES)
    assert len(sources) >= 4 and len(MODULES) >= 150, sources


def test_graphs_on_every_file(tmp_path: Path) -> None:
    """`xlagraph graphs` exits 0 on every readable module (a split file's parts written out on
    their own) and refuses the others, and every whole file, in one line (exit 2)."""
    runner = CliRunner()
    for name, entry in FILES.items():
        path = str(CORPUS / "modules" / name)
        result = runner.invoke(xlagraph, ["graphs", path])
        whole_read = not entry["split"] and not isinstance(_read(name, 0), InputError)
        if whole_read:
            assert result.exit_code == 0, (name, result.output)
        else:
            assert result.exit_code in (0, 2), (name, result.output)
            if result.exit_code == 2:
                lines = result.stderr.splitlines()
                assert len(lines) == 1 and lines[0].startswith("xlagraph: error: "), (name, result.stderr)
        if entry["split"]:
            for k in range(len(entry["modules"])):
                if isinstance(_read(name, k), InputError):
                    continue
                part = tmp_path / f"part{k}.mlir"
                part.write_text(_text(name, k))
                assert runner.invoke(xlagraph, ["graphs", str(part)]).exit_code == 0, (name, k)


# Hand-written modules (parser edge cases met in the corpus, cut down to the construct).


def test_zero_element_constant() -> None:
    """`dense<>` (JAX's constant of no elements: openxla/stablehlo testdata pad_*, fft_*) is read."""
    text = (
        "func.func @main() -> tensor<2x0xf32> {\n"
        "  %cst = stablehlo.constant dense<> : tensor<2x0xf32>\n"
        "  return %cst : tensor<2x0xf32>\n"
        "}\n"
    )
    (inst,) = [i for c in read_stablehlo(text, "m.mlir").computations for i in c.instructions]
    assert inst.opcode == "constant" and inst.shape == "f32[2,0]"


def test_operation_of_no_operands_with_its_type_only() -> None:
    """`stablehlo.after_all : !stablehlo.token` (no operands) is an after-all of token type."""
    text = (
        "func.func @main() -> !stablehlo.token {\n"
        "  %0 = stablehlo.after_all : !stablehlo.token\n"
        "  return %0 : !stablehlo.token\n"
        "}\n"
    )
    (inst,) = [i for c in read_stablehlo(text, "m.mlir").computations for i in c.instructions]
    assert inst.opcode == "after-all" and inst.shape == "token[]"


def test_function_defined_twice_is_refused() -> None:
    """Two `@main`s (a FileCheck file read whole, not split) are refused, never one read alone."""
    one = "func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  return %a : tensor<f32>\n}\n"
    with pytest.raises(InputError, match=r"^m\.mlir:4: function @main is defined twice \(first on line 1\)"):
        read_stablehlo(one + one, "m.mlir")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "  %0 = stablehlo.add %a, %a : tensor<f32>  func.return %0 : tensor<f32>\n",
            r"^m\.mlir:2: computation main: its return shares a line with stablehlo\.add",
        ),
    ],
    ids=["two-ops-one-line"],
)
def test_layouts_no_printer_writes_are_refused_by_name(body: str, message: str) -> None:
    text = "func.func @main(%a: tensor<f32>) -> tensor<f32> {\n" + body + "}\n"
    with pytest.raises(InputError, match=message):
        read_stablehlo(text, "m.mlir")


def test_dynamic_dimension_is_named() -> None:
    text = "func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {\n  return %a : tensor<?xf32>\n}\n"
    with pytest.raises(InputError, match=r"type tensor<\?xf32>: dynamic or bounded dimensions"):
        read_stablehlo(text, "m.mlir")


def test_counts_of_captured_values() -> None:
    """The corpus's programs pass loop state explicitly; a while and an if reading values from
    outside (hand-written, as the MLIR printer writes them) hold expected_counts' capture terms."""
    pytest.importorskip("jax")
    text = (
        "func.func @main(%a: tensor<i32>, %b: tensor<f32>, %p: tensor<i1>) -> (tensor<i32>, tensor<f32>) {\n"
        "  %c = stablehlo.constant dense<10> : tensor<i32>\n"
        "  %0 = stablehlo.while(%i = %a) : tensor<i32>\n"
        "  cond {\n"
        "    %1 = stablehlo.compare  LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
        "    stablehlo.return %1 : tensor<i1>\n"
        "  } do {\n"
        "    %1 = stablehlo.add %i, %a : tensor<i32>\n"
        "    stablehlo.return %1 : tensor<i32>\n"
        "  }\n"
        '  %2 = "stablehlo.if"(%p) ({\n'
        "    %3 = stablehlo.convert %0 : (tensor<i32>) -> tensor<f32>\n"
        "    %4 = stablehlo.add %3, %b : tensor<f32>\n"
        "    stablehlo.return %4 : tensor<f32>\n"
        "  }, {\n"
        "    stablehlo.return %b : tensor<f32>\n"
        "  }) : (tensor<i1>) -> tensor<f32>\n"
        "  return %0, %2 : tensor<i32>, tensor<f32>\n"
        "}\n"
    )
    spec = importlib.util.spec_from_file_location("stablehlo_corpus_manifest", CORPUS / "make_manifest.py")
    assert spec is not None and spec.loader is not None
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    mlir = make.mlir_counts(text)
    assert mlir["accepted"] and mlir["funcs"]["main"]["while_free"] == 2
    assert mlir["funcs"]["main"]["branch_tuples"] == 1  # the true branch reads two values: a tuple
    assert actual_counts(read_stablehlo(text, "m.mlir")) == expected_counts(mlir["funcs"])
