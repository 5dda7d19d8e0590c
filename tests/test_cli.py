"""The `xlagraph` command line, driven with click's CliRunner and checked through the library.

Inputs are real dumps: tests/data (PyTorch/XLA, written by tests/data/make_cli_data.py) and, when
present, fixtures/jax and fixtures/torch_xla. Broken inputs are made in tmp_path from real files
(cut, corrupted); the hand-made edits are marked where they happen.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from xlagraph.cli._common import Status
from xlagraph.cli.main import xlagraph

from xlagraph.diff import diff_files
from xlagraph.errors import XlagraphError
from xlagraph.graphs import list_graphs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
TRAIN = str(DATA / "train.hlo.txt")
JAX = ROOT / "fixtures" / "jax"
TORCH_XLA = ROOT / "fixtures" / "torch_xla"


def data(name: str) -> str:
    return str(DATA / name)


def run(*args: str) -> Result:
    return CliRunner().invoke(xlagraph, list(args))


def assert_one_line_error(result: Result, *must_contain: str) -> str:
    """Exit 2, nothing on stdout, exactly one `xlagraph: error:` line on stderr, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("xlagraph: error: ")
    assert "Traceback" not in result.output
    for text in must_contain:
        assert text in lines[0], (text, lines[0])
    return lines[0]


# --- basics -------------------------------------------------------------------------------------


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith("xlagraph, version ")


def test_help_lists_commands() -> None:
    result = run("--help")
    assert result.exit_code == 0
    assert "diff" in result.stdout and "graphs" in result.stdout
    for command in ("diff", "graphs"):
        sub = run(command, "--help")
        assert sub.exit_code == 0 and "Example:" in sub.stdout


def test_usage_errors_exit_2() -> None:
    assert run("diff", data("step.hlo")).exit_code == 2  # missing B
    assert run("diff", data("step.hlo"), data("step.hlo"), "--max-changes", "-1").exit_code == 2
    assert run("graphs").exit_code == 2
    assert run("nosuchcommand").exit_code == 2


def test_cli_does_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from xlagraph.cli.main import xlagraph\n"
        f"r = CliRunner().invoke(xlagraph, ['diff', {TRAIN + '#2'!r}, {TRAIN + '#3'!r}])\n"
        f"r2 = CliRunner().invoke(xlagraph, ['graphs', {TRAIN!r}, '--json'])\n"
        "assert (r.exit_code, r2.exit_code) == (1, 0), (r.output, r2.output)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'torch_xla', 'jax', 'jaxlib'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_help_imports_click_and_the_commands_only() -> None:
    """`xlagraph --help` must be fast: no engine, no networkx, no jinja2 until a command runs."""
    code = (
        "import sys\n"
        "from xlagraph.cli.main import main\n"
        "sys.argv = ['xlagraph', '--help']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "heavy = ('networkx', 'jinja2', 'xlagraph.diff', 'xlagraph.parse', 'xlagraph.canonical',\n"
        "         'xlagraph.report', 'xlagraph.render', 'xlagraph.capture', 'xlagraph.diagnose', 'torch')\n"
        "bad = sorted(m for m in sys.modules if m.startswith(heavy))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True)


def test_graphs_of_hlo_imports_no_diagnosis() -> None:
    """Listing HLO graphs is the core's parse and a table (issue 39: <= 0.3x of XLA's parse): the
    recognizers, the matcher, the report's code and the other commands stay unloaded (the
    recognizers alone cost 0.2 CPU-s where no bytecode is cached)."""
    code = (
        "import sys\n"
        "from xlagraph.cli.main import xlagraph as cli\n"
        f"cli.main(['graphs', {TRAIN!r}], standalone_mode=False)\n"
        f"cli.main(['graphs', {TRAIN!r}, '--json'], standalone_mode=False)\n"
        "heavy = ('networkx', 'jinja2', 'xlagraph.diagnose.recognizers', 'xlagraph.diagnose.causes',\n"
        "         'xlagraph.match', 'xlagraph.canonical', 'xlagraph.report', 'xlagraph.diff', 'torch',\n"
        "         'xlagraph.cli.diff', 'xlagraph.cli.report', 'xlagraph.cli.run', 'xlagraph.cli._html')\n"
        "bad = sorted(m for m in sys.modules if m.startswith(heavy))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True)


def _cli(*args: str, stdout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xlagraph.cli.main", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args", [("graphs", TRAIN), ("graphs", TRAIN, "--json"), ("diff", TRAIN + "#2", TRAIN + "#3")]
)
def test_closed_pipe_is_a_quiet_exit(args: tuple[str, ...]) -> None:
    """`xlagraph graphs X | head -1`: the reader is gone; no traceback, no "Exception ignored"."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = _cli(*args, stdout=write_end)
    finally:
        os.close(write_end)
    assert result.returncode == 141, result.stderr
    assert result.stderr == ""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args", [("graphs", TRAIN), ("diff", TRAIN + "#2", TRAIN + "#3", "--json"), ("--help",)]
)
def test_full_disk_is_one_line(args: tuple[str, ...]) -> None:
    with open("/dev/full", "w") as full:
        result = _cli(*args, stdout=full.fileno())
    assert result.returncode == 2, result.stderr
    assert result.stderr == "xlagraph: error: cannot write the output: No space left on device\n"


def test_control_characters_from_a_dump_are_escaped(tmp_path: Path) -> None:
    """A name, message or metadata string holding an escape sequence is printed escaped."""
    from xlagraph.cli._common import printable

    assert printable("a\x1b[2Jb\x07c\u202ed\n\te") == "a\\x1b[2Jb\\x07c\\u202ed\n\te"
    text = Path(data("step.hlo")).read_text().splitlines()
    text.insert(3, "  %evil\x1b]0;pwned\x07 = f32[] \x1b[2Jnonsense(")  # hand-made: a bad line with escapes
    bad = tmp_path / "escape\x1b[31m.hlo"
    bad.write_text("\n".join(text) + "\n")
    for args in (("graphs", str(bad)), ("diff", str(bad), data("step.hlo"))):
        result = run(*args)
        assert result.exit_code == 2
        assert "\x1b" not in result.output and "\x07" not in result.output
        assert "\\x1b" in result.stderr


def test_metadata_with_escapes_never_reaches_the_terminal_raw(tmp_path: Path) -> None:
    pair = JAX / "pairs" / "constant_change"
    for side in ("a", "b"):
        text = (pair / f"{side}.hlo").read_text()
        # Hand-made: every op_name carries a terminal escape sequence.
        (tmp_path / f"{side}.hlo").write_text(text.replace('op_name="', 'op_name="\x1b[31m'))
    for args in (
        ("diff", str(tmp_path / "a.hlo"), str(tmp_path / "b.hlo")),
        ("graphs", str(tmp_path / "a.hlo")),
    ):
        result = run(*args)
        assert result.exit_code in (0, 1), result.output
        assert "\x1b" not in result.output


# --- diff ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("step.hlo", "step.noshapes.hlo"),  # the same graph, two printers
        ("train.hlo.txt#1", "train.hlo.txt#2"),  # steady-state steps
        ("train.hlo.txt#2", "train.hlo.txt#4"),
        ("train_dump#0", "train.hlo.txt#0"),  # --xla_dump_to module vs the save file's graph
    ],
)
def test_diff_identical_exits_0(a: str, b: str) -> None:
    result = run("diff", data(a), data(b))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "identical"
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("a", "b", "kind"),
    [
        ("train.hlo.txt#2", "train.hlo.txt#3", "output_added"),
        ("train.hlo.txt#3", "train.hlo.txt#4", "output_removed"),
        ("train.hlo.txt#4", "train.hlo.txt#5", "parameter_shape"),
        ("step.hlo", "step_b3.hlo", "parameter_shape"),
        ("scale_1.hlo", "scale_0.hlo", "constant_value"),
        ("order_ab.hlo", "order_ba.hlo", "output_permutation"),
        ("slice_3.hlo", "slice_5.hlo", "attribute"),
        ("train.ir.txt#2", "train.ir.txt#3", "output_added"),
    ],
)
def test_diff_different_exits_1_and_names_the_cause(a: str, b: str, kind: str) -> None:
    result = run("diff", data(a), data(b))
    assert result.exit_code == 1, result.output
    expected = diff_files(data(a), data(b))
    n = len(expected.differences)
    assert result.stdout.splitlines()[0] == f"different: {n} cause{'s' if n > 1 else ''}"
    assert f"{kind}: " in result.stdout or f"{kind} (" in result.stdout
    assert "changed instructions" in result.stdout

    as_json = run("diff", data(a), data(b), "--json")
    assert as_json.exit_code == 1
    doc = json.loads(as_json.stdout)
    assert doc["verdict"] == "different"
    assert [c["kind"] for c in doc["causes"]] == [str(c.kind) for c in expected.causes]
    assert kind in [c["kind"] for c in doc["causes"] if not c["info"]]
    assert all(c["summary"] and c["hint"] for c in doc["causes"])


def test_diff_json_identical() -> None:
    result = run("diff", data("step.hlo"), data("step.noshapes.hlo"), "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["verdict"] == "identical" and doc["differences"] == 0
    assert doc["left"]["fingerprint"] == doc["right"]["fingerprint"]
    assert doc["left"]["label"] == data("step.hlo")
    assert doc["changed"] == {"left": [], "right": []}


def test_diff_json_is_deterministic() -> None:
    args = ("diff", data("order_ab.hlo"), data("order_ba.hlo"), "--json")
    assert run(*args).stdout == run(*args).stdout


def test_diff_max_changes() -> None:
    a, b = data("order_ab.hlo"), data("order_ba.hlo")
    bounded = run("diff", a, b, "--max-changes", "1")
    assert bounded.exit_code == 1
    assert "more not shown" in bounded.stdout
    full = run("diff", a, b, "--max-changes", "0")
    assert "more not shown" not in full.stdout


# --- graphs -------------------------------------------------------------------------------------


def test_graphs_text() -> None:
    result = run("graphs", TRAIN)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].split()[:3] == ["index", "name", "instructions"]
    assert "6 graphs, 3 unique (variants A, B, C)" in result.stdout
    assert result.stderr == ""


def test_graphs_json_checked_through_the_library() -> None:
    result = run("graphs", TRAIN, "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    listing = list_graphs(TRAIN)
    assert doc["unique"] == listing.unique == 3
    assert len(doc["modules"]) == 6
    for module, row in zip(doc["modules"], listing.rows, strict=True):
        for key in ("index", "name", "instructions", "computations", "fingerprint", "variant"):
            assert module[key] == getattr(row, key)


@pytest.mark.parametrize("src", ["train_dump", "train.ir.txt", "step.hlo", "step.noshapes.hlo"])
def test_graphs_other_sources(src: str) -> None:
    result = run("graphs", data(src), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["modules"] and all(m["fingerprint"] and m["variant"] for m in doc["modules"])


def test_graphs_spec_feeds_diff() -> None:
    """Every index `graphs` prints is a valid `PATH#K` for `diff`, dump directories included."""
    dump = data("train_dump")
    doc = json.loads(run("graphs", dump, "--json").stdout)
    first, last = doc["modules"][0], doc["modules"][-1]
    result = run("diff", f"{dump}#{first['index']}", f"{dump}#{last['index']}", "--json")
    assert result.exit_code in (0, 1)
    out = json.loads(result.stdout)
    assert out["left"]["fingerprint"] == first["fingerprint"]
    assert out["right"]["fingerprint"] == last["fingerprint"]


# --- bad input ----------------------------------------------------------------------------------


def _cut(tmp_path: Path) -> str:
    text = Path(data("step.hlo")).read_text()
    path = tmp_path / "cut.hlo"
    path.write_text(text[: len(text) // 2])  # a real file cut in the middle
    return str(path)


def _corrupt(tmp_path: Path, old: str, new: str) -> tuple[str, int]:
    """Real step.hlo with one line edited by hand: returns the path and the edited line number."""
    lines = Path(data("step.hlo")).read_text().split("\n")
    n = next(i for i, line in enumerate(lines) if old in line)
    lines[n] = lines[n].replace(old, new, 1)
    path = tmp_path / "edited.hlo"
    path.write_text("\n".join(lines))
    return str(path), n + 1


def test_missing_path(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.hlo")
    assert_one_line_error(run("diff", missing, data("step.hlo")), missing, "no such file")
    assert_one_line_error(run("graphs", missing), missing)


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.hlo"
    empty.write_text("")
    assert_one_line_error(run("diff", data("step.hlo"), str(empty)), str(empty), "empty")


def test_binary_file(tmp_path: Path) -> None:
    # A binary file that is no HLO module proto (a compiled Neuron executable's bytes, say).
    neff = tmp_path / "model.neff"
    neff.write_bytes(b"NEFF\0\x01\x02" + bytes(range(256)) * 4)
    assert_one_line_error(run("diff", str(neff), data("step.hlo")), str(neff), "binary")
    assert_one_line_error(run("graphs", str(neff)), str(neff), "binary")


def test_hlo_proto_file() -> None:
    proto = data("step.hlo.pb")  # the same graph as a serialized HloModuleProto
    result = run("diff", proto, data("step.hlo"))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("identical")


def test_truncated_hlo(tmp_path: Path) -> None:
    cut = _cut(tmp_path)
    line = assert_one_line_error(run("diff", cut, data("step.hlo")), cut + ":")
    assert "truncated" in line or "not closed" in line


def test_malformed_line(tmp_path: Path) -> None:
    path, n = _corrupt(tmp_path, "%multiply.43 = f32[]", "%multiply.43 = = f32[]")
    line = assert_one_line_error(run("diff", path, data("step.hlo")), path + ":")
    assert f"{path}:{n}:" in line or f"{path}:{n + 1}:" in line


def test_undefined_operand(tmp_path: Path) -> None:
    path, n = _corrupt(tmp_path, "broadcast(f32[] %multiply.43)", "broadcast(f32[] %undefined.1)")
    assert_one_line_error(run("diff", path, data("step.hlo")), f"{path}:{n}:", "undefined.1")


def test_index_out_of_range() -> None:
    assert_one_line_error(run("diff", f"{TRAIN}#6", data("step.hlo")), TRAIN, "#6", "out of range", "0 to 5")
    assert_one_line_error(run("diff", data("step.hlo") + "#1", data("step.hlo")), "out of range")


def test_negative_index() -> None:
    assert_one_line_error(run("diff", f"{TRAIN}#-1", data("step.hlo")), TRAIN, "#-1")


def test_directory_without_hlo(tmp_path: Path) -> None:
    report = next(
        p for p in Path(data("train_dump")).iterdir() if p.name.endswith("-memory-usage-report.txt")
    )
    (tmp_path / report.name).write_text(report.read_text())  # a real non-HLO dump file
    assert_one_line_error(run("graphs", str(tmp_path)), str(tmp_path), "no HLO")
    assert_one_line_error(run("diff", f"{tmp_path}#0", data("step.hlo")), str(tmp_path))


def test_stablehlo_file() -> None:
    """StableHLO text is read (issue 38): the same file twice is identical; against the HLO of
    the same graph (torch_xla's lowering, a different program text) it is never `identical`."""
    mlir = data("step.stablehlo.mlir")
    same = run("diff", mlir, mlir)
    assert same.exit_code == 0 and same.stdout.startswith("identical"), same.output
    other = run("diff", mlir, data("step.hlo"))
    assert other.exit_code == 1 and not other.stdout.startswith("identical"), other.output


def test_stablehlo_save_file() -> None:
    """An XLA_SAVE_TENSORS_FMT=stablehlo dump: its graphs are listed and diffed as HLO's are."""
    save = data("train.stablehlo.txt")
    listing = run("graphs", save)
    assert listing.exit_code == 0 and "2 graphs, 1 unique" in listing.stdout, listing.output
    same = run("diff", f"{save}#0", f"{save}#1")
    assert same.exit_code == 0 and same.stdout.startswith("identical"), same.output


def test_text_file_of_another_format() -> None:
    report = next(p for p in Path(data("train_dump")).iterdir() if p.name.endswith("-buffer-assignment.txt"))
    assert_one_line_error(run("diff", str(report), data("step.hlo")), str(report), "not a format")


@pytest.mark.parametrize("src", [TRAIN, data("train_dump")])
def test_multi_graph_source_without_index(src: str) -> None:
    line = assert_one_line_error(run("diff", src, data("step.hlo")), src, "#K", "xlagraph graphs")
    assert "6 graphs" in line


def test_graphs_on_a_bad_graph_names_file_and_line(tmp_path: Path) -> None:
    path, n = _corrupt(tmp_path, "broadcast(f32[] %multiply.43)", "broadcast(f32[] %undefined.1)")
    assert_one_line_error(run("graphs", path), f"{path}:{n}:")


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (PermissionError(13, "Permission denied"), "Permission denied"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "not UTF-8"),
        (RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
        (MemoryError(), "out of memory"),
    ],
)
def test_python_errors_are_one_line_naming_the_file(
    monkeypatch: pytest.MonkeyPatch, error: BaseException, text: str
) -> None:
    # The commands import the library when they run (a fast `--help`), so patch it there.
    import xlagraph.graphs
    import xlagraph.parse.sources

    def fail(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(xlagraph.parse.sources, "load_module", fail)
    monkeypatch.setattr(xlagraph.graphs, "list_graphs", fail)
    a = data("step.hlo")
    assert_one_line_error(run("diff", a, data("step_b3.hlo")), a, text)
    assert_one_line_error(run("graphs", a), a, text)


def test_failure_while_matching_names_both_files(monkeypatch: pytest.MonkeyPatch) -> None:
    import xlagraph.diff

    def fail(*args: object) -> None:
        raise RecursionError

    monkeypatch.setattr(xlagraph.diff, "diff_modules", fail)
    a, b = data("step.hlo"), data("step_b3.hlo")
    assert_one_line_error(run("diff", a, b), f"{a} vs {b}")


def test_keyboard_interrupt_exits_130_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    import xlagraph.graphs

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(xlagraph.graphs, "list_graphs", interrupted)
    result = run("graphs", TRAIN)
    assert result.exit_code == 130
    assert result.stdout == "" and result.stderr == ""


# --- status line --------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_status_is_quiet_when_not_a_terminal() -> None:
    stream = io.StringIO()
    with Status(stream, delay=0) as status:
        status.set("reading x")
        status.progress(1, 2)
    assert stream.getvalue() == ""


def test_status_is_quiet_when_fast() -> None:
    stream = _Terminal()
    with Status(stream, delay=60) as status:
        status.set("reading x")
        status.progress(1, 2)
    assert stream.getvalue() == ""


def test_status_shows_phase_and_bar_on_a_slow_terminal() -> None:
    stream = _Terminal()
    status = Status(stream, delay=0)
    status._reveal()  # what the timer does once the delay has passed
    status.set("reading train.hlo.txt")
    status.progress(3, 6)
    status.close()
    out = stream.getvalue()
    assert "xlagraph: reading train.hlo.txt" in out
    assert "[############------------] 3/6" in out
    assert out.endswith("\r\x1b[K")  # erased before the report is printed


def test_status_progress_is_the_list_graphs_callback() -> None:
    stream = _Terminal()
    status = Status(stream, delay=0)
    status._reveal()
    status.set("reading")
    list_graphs(TRAIN, progress=status.progress)
    status.close()
    assert "6/6" in stream.getvalue()


# --- shared fixtures (present once colleagues have generated them) -----------------------------


def _jax_pairs() -> list[tuple[str, dict[str, object]]]:
    manifest = JAX / "MANIFEST.json"  # missing: collection fails, it does not skip
    return sorted(json.loads(manifest.read_text()).get("pairs", {}).items())


@pytest.mark.parametrize(("name", "pair"), _jax_pairs())
def test_jax_pairs_exit_code_follows_the_verdict(name: str, pair: dict[str, object]) -> None:
    a, b = str(JAX / str(pair["a"])), str(JAX / str(pair["b"]))
    expected = diff_files(a, b)
    result = run("diff", a, b, "--json")
    assert result.exit_code == (0 if expected.verdict == "identical" else 1), result.output
    doc = json.loads(result.stdout)
    assert doc["verdict"] == expected.verdict == pair["expected_verdict"]
    assert [c["kind"] for c in doc["causes"]] == [str(c.kind) for c in expected.causes]


def test_jax_dump_dir_lists() -> None:
    result = run("graphs", str(JAX / "xla_dump"), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert {m["stage"] for m in doc["modules"]} >= {"before_optimizations"}


def _torch_xla_scenarios() -> list[tuple[str, dict[str, object]]]:
    manifest = TORCH_XLA / "MANIFEST.json"  # missing: collection fails, it does not skip
    return [(s["name"], s) for s in json.loads(manifest.read_text()).get("scenarios", [])]


@pytest.mark.parametrize(("name", "scenario"), _torch_xla_scenarios())
def test_torch_xla_pairs_exit_code_follows_the_verdict(name: str, scenario: dict[str, object]) -> None:
    pair = scenario["pair"]
    assert isinstance(pair, dict)
    a, b = str(TORCH_XLA / pair["a_file"]), str(TORCH_XLA / pair["b_file"])
    if not (Path(a).exists() and Path(b).exists()):
        pytest.fail(f"{name}: a.hlo/b.hlo missing: run fixtures/torch_xla/generate.py")
    expected = diff_files(a, b)
    result = run("diff", a, b, "--json")
    assert result.exit_code == (0 if expected.verdict == "identical" else 1), result.output
    doc = json.loads(result.stdout)
    assert [c["kind"] for c in doc["causes"]] == [str(c.kind) for c in expected.causes]
    text = run("diff", a, b)
    assert text.exit_code == result.exit_code
    assert text.stdout.splitlines()[0].startswith(expected.verdict)


def _torch_xla_sources() -> list[str]:
    patterns = ("**/save_hlo.txt", "**/save_text.txt", "**/xla_dump", "formats/*.hlo", "formats/*_save_*.txt",
                "formats/*_xla_dump")  # fmt: skip
    found = {p for pattern in patterns for p in TORCH_XLA.glob(pattern)}
    return sorted(str(p.relative_to(TORCH_XLA)) for p in found)


@pytest.mark.parametrize("src", _torch_xla_sources())
def test_torch_xla_sources_list_or_fail_in_one_line(src: str) -> None:
    """Every real torch_xla source: a listing consistent with the library, or one error line."""
    path = str(TORCH_XLA / src)
    result = run("graphs", path, "--json")
    if result.exit_code == 2:
        line = assert_one_line_error(result, path)
        with pytest.raises(XlagraphError) as info:
            list_graphs(path)
        assert line == f"xlagraph: error: {info.value}"
        assert "stablehlo" not in src, line  # StableHLO dumps are read (issue 38)
        return
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    listing = list_graphs(path)
    assert [m["variant"] for m in doc["modules"]] == [r.variant for r in listing.rows]
    assert doc["unique"] == listing.unique >= 1
    text = run("graphs", path)
    assert f"{len(listing.rows)} graph" in text.stdout


@pytest.mark.parametrize(("name", "scenario"), _torch_xla_scenarios())
def test_torch_xla_pairs_exit_code_matches_the_manifest(name: str, scenario: dict[str, object]) -> None:
    pair = scenario["pair"]
    assert isinstance(pair, dict)
    a, b = str(TORCH_XLA / pair["a_file"]), str(TORCH_XLA / pair["b_file"])
    if not (Path(a).exists() and Path(b).exists()):
        pytest.fail(f"{name}: a.hlo/b.hlo missing: run fixtures/torch_xla/generate.py")
    verdict = scenario["expected_verdict"]
    if verdict not in ("identical", "different"):  # free text, e.g. clean_loop's "same_graph_hash (...)"
        verdict = "different" if scenario["expected_causes"] else "identical"
    result = run("diff", a, b)
    assert result.exit_code == (0 if verdict == "identical" else 1), result.stdout


def test_a_diff_stops_the_collector_only_in_a_process_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """`xlagraph diff` (the installed command, which exits with it) runs without the cyclic
    collector; the same command run inside another program leaves that program's collector on."""
    import gc

    from xlagraph.cli import _common

    a, b = "fixtures/torch_xla/kept_alive/a.hlo", "fixtures/torch_xla/kept_alive/b.hlo"
    assert gc.isenabled()
    assert run("diff", a, b).exit_code == 1
    assert gc.isenabled()
    monkeypatch.setattr(_common, "ONE_COMMAND_PROCESS", True)
    try:
        assert run("diff", a, b).exit_code == 1
        assert not gc.isenabled()
    finally:
        gc.enable()
    code = (
        f"import atexit, gc, sys; sys.argv = ['xlagraph', 'diff', {a!r}, {b!r}]; "
        "atexit.register(lambda: print('collector', gc.isenabled(), file=sys.stderr)); "
        "from xlagraph.cli.main import entry; entry()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "collector False" in done.stderr, done.stderr


def test_a_report_stops_the_collector_only_in_a_process_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """`xlagraph report`, like `diff`: without the cyclic collector in the installed command's
    process (its pause over the recompiles ended in a rescan of every graph read), untouched
    inside another program; the report is the same either way."""
    import gc

    from xlagraph.cli import _common

    dump = "fixtures/torch_xla/kept_alive/save_hlo.txt"
    assert gc.isenabled()
    with_collector = run("report", dump)
    assert with_collector.exit_code == 0 and gc.isenabled()
    monkeypatch.setattr(_common, "ONE_COMMAND_PROCESS", True)
    try:
        without = run("report", dump)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert without.exit_code == 0 and without.stdout == with_collector.stdout
