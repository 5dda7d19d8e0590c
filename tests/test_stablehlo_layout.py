"""MLIR's syntax is free of line layout: a module re-laid out (operands, attributes and types broken
over lines at token boundaries, indentation changed, blank lines and `//` comment lines inserted)
reads as the same module, on every real module read today (fixtures/jax/stablehlo, the StableHLO
corpus), several seeds each. Bad layouts stay one-line refusals, never a hang."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from xlagraph.cli.main import xlagraph

from xlagraph.errors import InputError
from xlagraph.parse.stablehlo import stablehlo_to_hlo

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "stablehlo_corpus"
OPEN, CLOSE = "([{<", ")]}>"


def _relayout_line(line: str, rng: random.Random) -> list[str]:
    """One line broken at some spaces where MLIR's grammar continues the statement: inside open
    brackets, before `->` or `:`, after `,` or `=` (the piece boundaries keep the tokens whole)."""
    pieces, start, depth, in_str, i = [], 0, 0, False, 0
    body = line.lstrip()
    indent = line[: len(line) - len(body)]
    while i < len(body):
        c = body[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "/" and body[i : i + 2] == "//":
            break
        elif c in OPEN:
            depth += 1
        elif c in CLOSE and not (c == ">" and body[i - 1 : i] == "-"):
            depth = max(0, depth - 1)
        elif c == " " and 0 < i < len(body) - 1 and body[i - 1] != " " and body[i + 1] != " ":
            rest, before = body[i + 1 :], body[:i]
            can = depth > 0 or rest.startswith(("->", ": ")) or before.endswith("=")
            can |= before.endswith(",") and not body.startswith("}")
            if can and rng.random() < 0.3:
                pieces.append(body[start:i])
                start = i + 1
        i += 1
    pieces.append(body[start:])
    out = [indent + pieces[0]]
    for p in pieces[1:]:
        if rng.random() < 0.2:
            out.append("")
        if rng.random() < 0.2:
            out.append(" " * rng.randrange(8) + "// a comment (between pieces) {")
        out.append(" " * rng.randrange(12) + p)
    return out


def relayout(text: str, seed: int) -> tuple[str, list[int]]:
    """The text re-laid out, and each original line's new (1-based) number."""
    rng = random.Random(seed)
    out: list[str] = []
    where: list[int] = []
    for line in text.split("\n"):
        if rng.random() < 0.05:
            out.append(rng.choice(["", "  // inserted", "   "]))
        where.append(len(out) + 1)
        stripped = line.strip()
        if not stripped or stripped.startswith(("//", "#loc")) or stripped.startswith("at "):
            out.append(line)
            continue
        out.extend(_relayout_line(line.rstrip(), rng))
    return "\n".join(out), where


def _modules() -> list[tuple[str, str]]:
    got = [(p.name, p.read_text()) for p in sorted((ROOT / "fixtures" / "jax" / "stablehlo").glob("*.mlir"))]
    manifest = json.loads((CORPUS / "MANIFEST.json").read_text())
    for f in manifest["files"]:
        text = (CORPUS / "modules" / f["file"]).read_text()
        parts = text.split("\n// -----\n") if f["split"] else [text]
        for k, part in enumerate(parts):
            name = f"{f['file']}#{k}"
            try:
                stablehlo_to_hlo(part, name)
            except InputError:
                continue
            got.append((name, part))
    return got


MODULES = _modules()


@pytest.mark.parametrize(("name", "text"), MODULES, ids=[n for n, _ in MODULES])
def test_relayout_reads_the_same(name: str, text: str) -> None:
    hlo, lines = stablehlo_to_hlo(text, name)
    for seed in range(4):
        moved, where = relayout(text, seed)
        try:
            hlo2, lines2 = stablehlo_to_hlo(moved, name)
        except InputError as e:
            raise AssertionError(f"seed {seed}: {e}\n{moved}") from None
        assert hlo2 == hlo, f"seed {seed}"
        assert lines2 == [where[n - 1] if n > 0 else 0 for n in lines], f"seed {seed}"


def test_some_relayout_breaks_lines() -> None:
    """The property is not vacuous: most modules get many more lines."""
    grown = sum(len(relayout(t, 0)[0].split("\n")) > len(t.split("\n")) + 5 for _, t in MODULES)
    assert grown >= len(MODULES) * 0.8


HEAD = "func.func @main(%a: tensor<f32>) -> tensor<f32> {\n"


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("  %0 = stablehlo.constant dense<[1.0,\n    2.0]> : tensor<2xf32>\n  return %a : tensor<f32>\n", 2),
        ('  %0 = "stablehlo.abs"(%a)\n    : (tensor<f32>) -> tensor<f32>\n  return %0 : tensor<f32>\n', 2),
        ("  %0 = stablehlo.add %a,\n\n  // c\n %a\n  : tensor<f32>\n  return %0 : tensor<f32>\n", 2),
    ],
    ids=["constant-over-lines", "type-on-next-line", "operands-comments-blank"],
)
def test_operations_over_lines_are_read(body: str, line: int) -> None:
    _hlo, lines = stablehlo_to_hlo(HEAD + body + "}\n", "m.mlir")
    assert line in lines


def test_signature_over_lines_is_read() -> None:
    one = stablehlo_to_hlo(HEAD + "  return %a : tensor<f32>\n}\n", "m.mlir")[0]
    text = "func.func @main(\n    %a: tensor<f32>)\n    -> tensor<f32>\n{\n  return %a\n   : tensor<f32>\n}\n"
    assert stablehlo_to_hlo(text, "m.mlir")[0] == one


@pytest.mark.parametrize(
    "text",
    [
        "func.func @main(%a: tensor<f32>) -> tensor<f32> {( \n"
        + "  %0 = stablehlo.add %a, %a : tensor<f32>\n" * 250_000,
        HEAD + '  %0 = stablehlo.custom_call @f(%a) {backend_config = "never closed\n' + "  x\n" * 500_000,
        "(" * 100_000 + "\n" + "[<{" * 100_000,
    ],
    ids=["unclosed-paren-10MB", "string-never-closed", "deep-brackets"],
)
def test_bad_layout_is_one_line_quickly(text: str) -> None:
    t0 = time.perf_counter()
    with pytest.raises(InputError) as e:
        stablehlo_to_hlo(text, "m.mlir")
    assert time.perf_counter() - t0 < 10
    assert "\n" not in str(e.value) and str(e.value).startswith("m.mlir:")


def test_cli_refuses_unclosed_brace_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(
        "module {\n  func.func @main(%a: tensor<f32>) -> tensor<f32> { %x = {\n"
        + "  return %a : tensor<f32>\n" * 400_000
    )
    result = CliRunner().invoke(xlagraph, ["graphs", str(path)])
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.stderr[:500]
