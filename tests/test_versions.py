"""The version corpus (fixtures/xla_versions): real HLO text from many XLA generations and producers.

Every module XLA reads is read with XLA's computation and instruction counts (jaxlib's, on the text
with only another version's spellings rewritten: collect.py REWRITES); each such spelling yields a
note naming the file and line, never an error, and a module without one yields no note. Modules
XLA refuses (fragments users cut out of dumps) are refused with one line naming file:line. The
refusals that matter (truncation, unbalanced braces, undefined operands, cycles, shapes that
contradict themselves) still hold on real text cut or edited here, as `xlagraph graphs` shows them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from xlagraph.errors import InputError
from xlagraph.parse.hlo import parse_hlo, summarize_hlo

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "xla_versions"
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text())
ENTRIES = {e["file"]: e for e in MANIFEST["modules"]}
READ = sorted(f for f, e in ENTRIES.items() if e["xla"]["accepted"])
REFUSED = sorted(f for f, e in ENTRIES.items() if not e["xla"]["accepted"])
NOTE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): note: ")


def _text(name: str) -> str:
    return (CORPUS / "modules" / name).read_bytes().decode("utf-8", "surrogateescape")


def _collect():
    spec = importlib.util.spec_from_file_location("xla_versions_collect", CORPUS / "collect.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_corpus_is_whole() -> None:
    files = {p.name for p in (CORPUS / "modules").glob("*.hlo")}
    assert files == set(ENTRIES)
    for name, entry in ENTRIES.items():
        assert hashlib.sha256((CORPUS / "modules" / name).read_bytes()).hexdigest() == entry["sha256"], name
        source = entry["source"]
        assert source["repo"] and source["path"] and re.fullmatch(r"[0-9a-f]{40}", source["commit"]), name
        assert entry["producer"] and entry["era"], name
    producers = Counter(e["producer"] for e in ENTRIES.values())
    least = {"neuron": 80, "jax-gpu": 90, "xla-test": 85, "jax-tpu": 4, "torch_xla-tpu": 2, "tf": 1}
    least |= {"jax": 10, "torch_xla-2.0": 29}  # (JAX < 0.4; torch_xla 2.0/2.1 dev, pre-openxla)
    assert all(producers[p] >= n for p, n in least.items()), producers
    assert len(READ) >= 200 and len(REFUSED) >= 5


def test_every_hlo_diff_test_file_is_in() -> None:
    """hlo_diff's test modules are read as XLA reads them: the corpus holds the 16 test files of
    xla/hlo/tools/hlo_diff that build a module from text (the other 4 build none)."""
    paths = {e["source"]["path"] for e in ENTRIES.values() if "/hlo_diff/" in e["source"]["path"]}
    assert len(paths) == 16, sorted(paths)


def test_summary_in_readme_is_current() -> None:
    """The closing note's counts by source and XLA generation: README.md holds summary.py's table."""
    spec = importlib.util.spec_from_file_location("xla_versions_summary", CORPUS / "summary.py")
    assert spec is not None and spec.loader is not None
    summary = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = summary
    spec.loader.exec_module(summary)
    readme = (CORPUS / "README.md").read_text()
    assert summary.with_summary(readme, summary.summary()) == readme, "run summary.py --write"


def test_transcript_names_each_tests_modules() -> None:
    cc = (
        'TEST_F(T, Two) {\n  P(R"(\nHloModule a\n)");\n  P(R"(\nHloModule b\n)");\n}\n'
        'TEST_F(T, One) {\n  const char* s = R"(HloModule c)";\n  R"(no module)";\n}\n'
    )
    assert _collect().test_modules(cc) == [
        ("Two.left", "\nHloModule a\n"),
        ("Two.right", "\nHloModule b\n"),
        ("One", "HloModule c"),
    ]


def test_python_files_give_their_literals_and_doctests() -> None:
    """in_python: a module spelled as adjacent literals (TensorFlow Federated's tests) is their
    joined value; a doctest's expected module is read as doctest reads it (JAX's docstring)."""
    py = (
        "x = ('HloModule a\\n\\n'\n     'ENTRY a {\\n  ROOT p = f32[] parameter(0)\\n}\\n\\n')\n"
        'def f():\n  """Doc.\n\n  >>> print(c.as_hlo_text())  # doctest: +SKIP\n  HloModule b\n'
        "  <BLANKLINE>\n  ENTRY b {\n    ROOT p = f32[] parameter(0)\n  }\n  <BLANKLINE>\n"
        '\n  After.\n  """\n'
    )
    collect = _collect()
    assert collect.in_python(py) == [
        "HloModule a\n\nENTRY a {\n  ROOT p = f32[] parameter(0)\n}\n\n",
        "HloModule b\n\nENTRY b {\n  ROOT p = f32[] parameter(0)\n}\n",
    ]
    old_test = 'XLA_TEST_F(T, Old) {\n  P(R"(HloModule c)");\n}\n'
    assert collect.test_modules(old_test) == [("Old", "HloModule c")]


@pytest.mark.parametrize("name", READ)
def test_read_with_xlas_counts(name: str) -> None:
    xla = ENTRIES[name]["xla"]
    module = parse_hlo(_text(name), name)
    assert (len(module.computations), module.instruction_count) == (xla["computations"], xla["instructions"])
    if xla["rewritten"]:
        # Another version's spelling: read, and said so, once per kind, at a line of this file.
        assert module.notes, "an old spelling was read without a note"
        for note in module.notes:
            m = NOTE.match(note)
            assert m and m["file"] == name and int(m["line"]) >= 1, note
    else:
        assert module.notes == ()


def test_old_spelling_notes_name_the_spelling_and_its_first_line() -> None:
    name = next(f for f in READ if "api_version=API_VERSION_UNSPECIFIED" in _text(f))
    text = _text(name)
    first = text[: text.index("api_version=API_VERSION_UNSPECIFIED")].count("\n") + 1
    (note,) = parse_hlo(text, name).notes
    assert note.startswith(f"{name}:{first}: note: custom-call api_version=API_VERSION_UNSPECIFIED")
    count = text.count("api_version=API_VERSION_UNSPECIFIED")
    assert note.endswith(f"({count} places)") if count > 1 else "places" not in note
    summary = summarize_hlo(text, name)
    assert summary is not None and summary.notes == (note,)


def test_notes_count_lines_from_first_line() -> None:
    """In a multi-graph file the note points into the file, as errors do."""
    name = next(f for f in READ if "api_version=API_VERSION_UNSPECIFIED" in _text(f))
    (plain,) = parse_hlo(_text(name), name).notes
    (shifted,) = parse_hlo(_text(name), name, first_line=101).notes
    assert int(NOTE.match(shifted)["line"]) == int(NOTE.match(plain)["line"]) + 100


@pytest.mark.parametrize("name", REFUSED)
def test_refused_as_xla_refuses(name: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_hlo(_text(name), name)
    assert re.match(rf"{re.escape(name)}:\d+: ", str(caught.value)), str(caught.value)


def _graphs(path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "xlagraph.cli.main", "graphs", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_cli_lists_a_module_with_old_spellings(tmp_path: Path) -> None:
    name = min(
        (f for f in READ if "api_version=API_VERSION_UNSPECIFIED" in _text(f)),
        key=lambda f: len(_text(f)),
    )
    path = tmp_path / name
    path.write_text(_text(name))
    proc = _graphs(path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    # The spelling read is said, once, as a note naming the file and line: never an error.
    notes = [line for line in proc.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "API_VERSION_UNSPECIFIED" in notes[0], proc.stdout
    assert notes[0].startswith(f"note: {path}:"), notes[0]


def test_diff_says_each_sides_old_spellings() -> None:
    import xlagraph.diff
    from xlagraph.parse.hlo import parse_hlo as read

    names = sorted(f for f in READ if "api_version=API_VERSION_UNSPECIFIED" in _text(f))[:2]
    a, b = (read(_text(n), n) for n in names)
    notes = [n for n in xlagraph.diff.diff_modules(a, b).notes if "API_VERSION_UNSPECIFIED" in n]
    assert [n.split(":")[0] for n in notes] == names, notes
    assert not any(": note: " in n for n in notes), notes


# Real text made into text no XLA version writes, each refused with one line naming the file and
# the line at fault. The base is a real torch-neuronx dump of the corpus.
BASE = "neuron.wenboqian.linear_module_forward.hlo"


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _truncated(text: str) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[: len(lines) * 2 // 3])


def _unbalanced(text: str) -> str:
    return text.rstrip() + "\n}\n"


def _undefined_operand(text: str) -> str:
    return _edit(text, "multiply(f32[4]{0} %p2.3,", "multiply(f32[4]{0} %p2.99,")


def _cycle(text: str) -> str:
    """reshape.2 reads multiply, which reads reshape.2."""
    return _edit(text, "reshape(f32[1,4]{1,0} %custom-call.2)", "reshape(f32[4]{0} %multiply)")


def _contradicting_shape(text: str) -> str:
    return _edit(text, "%p0.1 = f32[1,4]{1,0} parameter(0)", "%p0.1 = f32[1,4]{1,0,2} parameter(0)")


BREAKS = {
    "truncated": _truncated,
    "unbalanced_brace": _unbalanced,
    "undefined_operand": _undefined_operand,
    "cycle": _cycle,
    "contradicting_shape": _contradicting_shape,
}


@pytest.mark.parametrize("kind", sorted(BREAKS))
def test_text_no_version_writes_is_refused_naming_file_and_line(kind: str, tmp_path: Path) -> None:
    broken = BREAKS[kind](_text(BASE))
    path = tmp_path / f"{kind}.hlo"
    path.write_text(broken)
    with pytest.raises(InputError) as caught:
        parse_hlo(broken, str(path))
    assert re.match(rf"{re.escape(str(path))}:\d+: ", str(caught.value)), str(caught.value)
    proc = _graphs(path)
    lines = [s for s in proc.stderr.splitlines() if s.strip()]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1 and re.search(rf"{re.escape(path.name)}:\d+", lines[0]), lines


# The oracle cannot rot: a spread of the corpus, re-run through jaxlib as installed.
SAMPLE = sorted(
    [f for f in READ if ENTRIES[f]["producer"] == "xla-test"][:3]
    + sorted((f for f in READ if ENTRIES[f]["xla"]["rewritten"]), key=lambda f: len(_text(f)))[:2]
    + REFUSED[:1]
)


@pytest.mark.parametrize("name", SAMPLE)
def test_manifest_matches_jaxlib_today(name: str) -> None:
    assert _collect().oracle(_text(name)) == ENTRIES[name]["xla"]


# Spellings of XLA's own history that today's XLA refuses, as XLA printed them. Hand-written (parser
# edge cases, labelled as such): no dump of those years was found in public repositories; the
# spellings are cited from XLA's source of the time (hlo_instructions.cc printed
# `is_cross_program_prefetch=true` in 2020-22; hlo_parser_test.cc of 2018 has `cross-replica-sum`
# with `replica_group_ids` / `all_reduce_id` and constants that repeat their shape). Each is read
# with a note, with the counts jaxlib gives on the text rewritten to today's spelling.
HISTORY = {
    "is_cross_program_prefetch": (
        "HloModule m\nENTRY e {\n  p = f32[2,3]{1,0} parameter(0)\n"
        "  cs = (f32[2,3]{1,0:S(1)}, f32[2,3]{1,0}, u32[]) copy-start(p), is_cross_program_prefetch=true\n"
        "  ROOT cd = f32[2,3]{1,0:S(1)} copy-done(cs)\n}\n",
        [("is_cross_program_prefetch=true", "cross_program_prefetch_index=0")],
    ),
    "cross_replica_sum": (
        "HloModule m\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
        "  ROOT a = f32[] add(x, y)\n}\n"
        "ENTRY e {\n  p = f32[8] parameter(0)\n"
        "  ROOT c = f32[8] cross-replica-sum(p), replica_group_ids={}, all_reduce_id=1, to_apply=add\n}\n",
        [("cross-replica-sum", "all-reduce"), (", replica_group_ids={}", ""), (", all_reduce_id=1", "")],
    ),
    # hlo_opcode.h before 2019: one comparison opcode per direction (kEq "equal-to" ... kNe
    # "not-equal-to"), replaced by `compare` + direction=. Real text: `less-than` in
    # tensorflow/compiler/xla/tests/test_utils_test.cc of 2019 (corpus: xla-test.test_utils_test.
    # NoDuplicates*.hlo); the other five as that hlo_opcode.h spells them.
    "comparison_opcodes": (
        "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
        "  lt = pred[4] less-than(a, b)\n  le = pred[4] less-than-or-equal-to(a, b)\n"
        "  gt = pred[4] greater-than(f32[4] a, f32[4] b)\n  ge = pred[4] greater-than-or-equal-to(a, b)\n"
        '  eq = pred[4] equal-to(a, b)\n  ne = pred[4] not-equal-to(a, b), metadata={op_name="ne"}\n'
        "  ROOT t = (pred[4], pred[4], pred[4], pred[4], pred[4], pred[4])"
        " tuple(lt, le, gt, ge, eq, ne)\n}\n",
        [
            # (the longer names first: `equal-to(` ends three of them)
            ("less-than-or-equal-to(a, b)", "compare(a, b), direction=LE"),
            ("greater-than-or-equal-to(a, b)", "compare(a, b), direction=GE"),
            ("not-equal-to(a, b)", "compare(a, b), direction=NE"),
            ("less-than(a, b)", "compare(a, b), direction=LT"),
            ("greater-than(f32[4] a, f32[4] b)", "compare(f32[4] a, f32[4] b), direction=GT"),
            ("equal-to(a, b)", "compare(a, b), direction=EQ"),
        ],
    ),
    "constant_repeats_its_shape": (
        "HloModule m\nENTRY e {\n  c = bf16[2,2] constant(bf16[2,2] {{1, 2}, {3, 4}})\n"
        "  ROOT d = f32[2,2] constant(f32[2,2] { { 1, 2 }, { 3, 4 } })\n}\n",
        [("constant(bf16[2,2] ", "constant("), ("constant(f32[2,2] ", "constant(")],
    ),
}


@pytest.mark.parametrize("name", sorted(HISTORY))
def test_spelling_of_xlas_history_read_with_a_note(name: str) -> None:
    text, rewrites = HISTORY[name]
    module = parse_hlo(text, f"{name}.hlo")
    assert module.notes and all(NOTE.match(n)["file"] == f"{name}.hlo" for n in module.notes)
    today = text
    for old, new in rewrites:
        assert old in today
        today = today.replace(old, new)
    verdict = _collect().extract.run_oracle(text)
    assert not verdict["accepted"], "jaxlib reads it as written: not another version's spelling"
    verdict = _collect().extract.run_oracle(today)
    assert verdict["accepted"], verdict.get("message")
    assert (len(module.computations), module.instruction_count) == (
        verdict["computations"],
        verdict["instructions"],
    )
    assert parse_hlo(today, "today.hlo").notes == ()


def test_constant_repeating_another_shape_is_refused() -> None:
    text = "HloModule m\nENTRY e {\n  ROOT d = f32[2,2] constant(f32[2,3] { { 1, 2 }, { 3, 4 } })\n}\n"
    with pytest.raises(InputError, match=r"^c\.hlo:3: the constant's own shape f32\[2,3\]"):
        parse_hlo(text, "c.hlo")


def test_old_comparison_opcode_reads_as_compare_with_its_direction() -> None:
    """`less-than` is `compare` with direction=LT: the same hash as today's spelling; one that also
    writes a direction is text no XLA version wrote, refused naming its line."""
    old = "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT lt = pred[] less-than(a, a)\n}\n"
    new = old.replace("less-than(a, a)", "compare(a, a), direction=LT")
    from xlagraph.canonical import canonicalize

    def fingerprint(text: str) -> str:
        return canonicalize(parse_hlo(text, "m.hlo")).fingerprint

    assert fingerprint(old) == fingerprint(new) != fingerprint(new.replace("LT", "GT"))
    with pytest.raises(InputError, match=r"^both\.hlo:4: attribute direction already exists"):
        parse_hlo(old.replace("less-than(a, a)", "less-than(a, a), direction=GT"), "both.hlo")
