"""The compiled StableHLO reader (rust/src/parse/stablehlo/, `_core.stablehlo_to_hlo`) against its
readable reference (tests/stablehlo_reference, the Python it was ported from): the same HLO text
and line map byte for byte, and for refused input the same message and line (or the same refusal
of the text as a whole), on every module of fixtures/stablehlo_corpus (read and refused alike),
every `.mlir` under fixtures/ and tests/data/, the JAX fixtures changed in their text as the equivalence test
changes them (SSA values renamed, operations reordered, arguments permuted), generated Shardy
modules, and mutated text (cut at any offset, lines deleted, duplicated or swapped, characters
dropped or added), so that the error paths agree too. And it never fails otherwise: binary
text, deep nesting and huge constants are refused cleanly, as the reference refuses them.
"""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.stablehlo_reference import reference_to_hlo
from xlagraph import _core
from xlagraph.errors import InputError, ParseError
from xlagraph.parse.stablehlo import stablehlo_to_hlo

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "stablehlo_corpus"
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text())
SPLIT = "\n// -----\n"
MLIR_FILES = sorted(
    p.relative_to(ROOT).as_posix() for d in ("fixtures", "tests/data") for p in (ROOT / d).rglob("*.mlir")
)
JAX = sorted((ROOT / "fixtures" / "jax" / "stablehlo").glob("*.mlir"))


def core_to_hlo(text: str) -> tuple:
    """What the core makes of `text`, in the reference's terms (`reference_to_hlo`)."""
    try:
        hlo, lines = _core.stablehlo_to_hlo(text)
    except _core.StableHloError as e:
        message, line, kind = e.args
        return ("parse", message, line) if kind == "parse" else ("input", message)
    return ("hlo", hlo, list(lines))


def assert_same(text: str, what: str = "") -> tuple:
    ours, reference = core_to_hlo(text), reference_to_hlo(text)
    if ours != reference:
        detail = ""
        if ours[0] == reference[0] == "hlo":
            for k, (a, b) in enumerate(zip(ours[1].split("\n"), reference[1].split("\n"), strict=False)):
                if a != b:
                    detail = f"\nline {k + 1}:\n  core:      {a[:300]}\n  reference: {b[:300]}"
                    break
            else:
                detail = f"\nsame text; line maps differ: {ours[2][:20]} vs {reference[2][:20]}"
        else:
            detail = f"\n  core:      {str(ours)[:400]}\n  reference: {str(reference)[:400]}"
        raise AssertionError(f"{what}: the core and the reference differ{detail}")
    return ours


def _corpus_modules() -> list[tuple[str, int]]:
    return [(f["file"], k) for f in MANIFEST["files"] for k in range(len(f["modules"]))]


def _corpus_text(name: str, k: int) -> str:
    text = (CORPUS / "modules" / name).read_text()
    split = next(f["split"] for f in MANIFEST["files"] if f["file"] == name)
    return text.split(SPLIT)[k] if split else text


def test_corpus_modules_agree() -> None:
    """Every module of the corpus, read (144) and refused (61) alike."""
    kinds: dict[str, int] = {}
    for name, k in _corpus_modules():
        got = assert_same(_corpus_text(name, k), f"{name} #{k}")
        kinds[got[0]] = kinds.get(got[0], 0) + 1
    assert kinds.get("hlo", 0) >= 144 and sum(kinds.values()) == 205, kinds


@pytest.mark.parametrize("name", MLIR_FILES)
def test_fixture_files_agree(name: str) -> None:
    assert_same((ROOT / name).read_text(), name)


def test_text_transforms_agree() -> None:
    """The JAX fixtures as the equivalence test changes them in their text."""
    from tests.metamorphic.stablehlo_text import permute_args, rename, reorder

    rng = random.Random(38)
    for path in JAX:
        text = path.read_text()
        for k in range(3):
            variants = [rename(text, rng)]
            with contextlib.suppress(Exception):  # a module the transform does not apply to
                variants.append(reorder(text, rng))
            try:
                n = text.split("func.func public @main(", 1)[1].split(")", 1)[0].count("%arg")
                perm = list(range(n))
                rng.shuffle(perm)
                variants.append(permute_args(text, dict(enumerate(perm))))
            except Exception:
                pass
            for v in variants:
                assert_same(v, f"{path.name} changed ({k})")


def test_shardy_modules_agree() -> None:
    """Generated Shardy modules (meshes, sub-axes, open dimensions, device orders, merged
    meshes), as test_stablehlo.py generates them for XLA's reference."""
    from tests.test_stablehlo import _MESHES, _device_ids, _random_sharding

    rng = random.Random(38)
    for _ in range(60):
        meshes = [rng.choice(_MESHES) for _ in range(rng.choice([1, 2, 3]))]
        lines = []
        for m, axes in enumerate(meshes):
            mesh = "<[" + ", ".join(f'"{n}"={s}' for n, s in axes) + "]" + _device_ids(rng) + ">"
            lines.append(f"  sdy.mesh @mesh{m} = {mesh}")
        args, ops = [], []
        for k in range(4):
            m = rng.randrange(len(meshes))
            rank = rng.choice([1, 2, 3])
            s = _random_sharding(rng, meshes[m], rank).replace("@mesh", f"@mesh{m}", 1)
            args.append(f"%arg{k}: tensor<{'8x' * rank}f32> {{sdy.sharding = #sdy.sharding<{s}>}}")
            ops.append(
                f"    %{k} = stablehlo.negate %arg{k} {{sdy.sharding = #sdy.sharding_per_value<[<{s}>]>}}"
                f" : tensor<{'8x' * rank}f32>"
            )
        text = (
            "module @m attributes {mhlo.num_partitions = 8 : i32} {\n" + "\n".join(lines) + "\n"
            f"  func.func public @main({', '.join(args)}) {{\n" + "\n".join(ops) + "\n    return\n  }\n}\n"
        )
        assert_same(text, "generated Shardy module")


def _bases() -> list[str]:
    texts = [p.read_text() for p in JAX]
    rng = random.Random(7)
    corpus = _corpus_modules()
    texts += [_corpus_text(*m) for m in rng.sample(corpus, 40)]
    return [t for t in texts if len(t) < 60_000]


BASES = _bases()
PUNCTUATION = [*'{}()<>[]%,:="#@^ \n', "loc(", "->", "tensor<", "dense<", "stablehlo.", "^bb0"]


@st.composite
def _mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(BASES))
    for _ in range(draw(st.integers(1, 3))):
        lines = text.split("\n")
        kind = draw(st.sampled_from(["cut", "delete", "duplicate", "swap", "drop", "insert"]))
        if kind == "cut":
            text = text[: draw(st.integers(0, len(text)))]
        elif kind == "delete" and lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
            text = "\n".join(lines)
        elif kind == "duplicate" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(draw(st.integers(0, len(lines))), lines[i])
            text = "\n".join(lines)
        elif kind == "swap" and len(lines) > 1:
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif kind == "drop" and text:
            i = draw(st.integers(0, len(text) - 1))
            text = text[:i] + text[i + 1 :]
        elif kind == "insert":
            i = draw(st.integers(0, len(text)))
            text = text[:i] + draw(st.sampled_from(PUNCTUATION)) + text[i:]
    return text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated())
def test_mutated_text_agrees(text: str) -> None:
    assert_same(text, "mutated text")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_ascii_garbage_agrees(text: str) -> None:
    assert_same("module {\n" + text, "garbage in a module")
    assert_same(text, "garbage")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_binary_is_refused_cleanly(data: bytes) -> None:
    """Any text (bytes decoded as Latin-1 or with replacement) is read or refused, never a crash."""
    latin = data.decode("latin-1")
    for text in (latin, data.decode("utf-8", "replace"), "module {\n" + latin):
        got = core_to_hlo(text)
        assert got[0] in ("hlo", "parse", "input")
        assert "internal error" not in str(got[1])


def _deep_regions(depth: int) -> str:
    head = "module {\n  func.func @main(%a: tensor<i32>) -> tensor<i32> {\n"
    opens = "".join(
        f'%r{k} = "stablehlo.case"(%a) ({{\n' for k in range(depth)
    )
    closes = "".join(
        "  stablehlo.return %a : tensor<i32>\n}) : (tensor<i32>) -> tensor<i32>\n" for _ in range(depth)
    )
    return head + opens + closes + "    return %a : tensor<i32>\n  }\n}\n"


def test_nesting_within_bounds_agrees() -> None:
    """Regions nested 150 deep are read alike (the core reads such text on a thread with a stack of
    its own when the caller's thread would not do: rust/src/parse/stablehlo/read.rs)."""
    assert assert_same(_deep_regions(150), "150 nested regions")[0] == "hlo"


@pytest.mark.parametrize(
    "text",
    [
        _deep_regions(3000),
        "module {\n  func.func @main(%a: "
        + "tuple<" * 5000 + "f32" + ">" * 5000 + ") {\n    return\n  }\n}\n",
        "module {\n  func.func @main() -> tensor<1xf32> {\n    %0 = stablehlo.constant dense<"
        + "[" * 5000 + "1.0" + "]" * 5000 + "> : tensor<1xf32>\n    return %0 : tensor<1xf32>\n  }\n}\n",
    ],
    ids=["regions", "tuple-type", "constant"],
)
def test_deep_nesting_is_refused(text: str) -> None:
    """Nesting past what is read: "nested too deeply", as the reference's RecursionError."""
    assert core_to_hlo(text) == ("input", "StableHLO nested too deeply to read")
    assert reference_to_hlo(text) == ("input", "StableHLO nested too deeply to read")
    with pytest.raises(InputError, match="nested too deeply"):
        stablehlo_to_hlo(text, "deep.mlir")


def test_huge_splat_is_refused() -> None:
    """A splat constant of more elements than an HLO literal is written for: refused, bounded."""
    text = (
        "module {\n  func.func @main() -> tensor<100000x100000xf32> {\n"
        "    %0 = stablehlo.constant dense<1.0> : tensor<100000x100000xf32>\n"
        "    return %0 : tensor<100000x100000xf32>\n  }\n}\n"
    )
    got = assert_same(text, "huge splat")
    assert got[0] == "parse" and "splat constant of 10000000000 elements" in got[1]


def test_constants_are_bounded_in_all() -> None:
    """Splats of 4M elements each, 9 of them: past what all of a module's constants may write, the
    core refuses the module in a line (its memory stays bounded; the reference, unbounded, would
    write 36M elements)."""
    ops = "\n".join(
        f"    %{k} = stablehlo.constant dense<1.0> : tensor<2048x2048xf32>" for k in range(9)
    )
    text = (
        "module {\n  func.func @main() -> tensor<2048x2048xf32> {\n" + ops + "\n"
        "    return %8 : tensor<2048x2048xf32>\n  }\n}\n"
    )
    got = core_to_hlo(text)
    assert got[:1] == ("parse",) and got[2] == 11, got[:3]  # the ninth
    assert got[1] == "stablehlo.constant: constants of more than 33554432 elements in all are not read"


def test_errors_name_the_users_line() -> None:
    """`first_line` shifts a refusal's line, as it did in Python; line 0 stays 0."""
    text = "module {\n  func.func @main() {\n    %0 = stablehlo.uniform_quantize %x : tensor<4xf32>\n"
    with pytest.raises(ParseError) as e:  # quantized types: no HLO counterpart (stablehlo.fft was read since)
        stablehlo_to_hlo(text + "    return\n  }\n}\n", "m.mlir", first_line=10)
    assert e.value.line == 12 and "stablehlo.uniform_quantize" in str(e.value)
