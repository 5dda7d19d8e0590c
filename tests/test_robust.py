"""Bad input never hangs, never takes unbounded memory and never gives a traceback.

Special files (FIFO, a link to /dev/zero, a symbolic link loop, a directory where a file is
expected) and oversized files are refused in one line with exit status 2, for a single file, a
--xla_dump_to directory and every file of a capture folder. Iota replica groups are validated and
bounded; `PATH#K` takes ASCII digits only. Modules and capture folders are real (fixtures/,
tests/data); the small HLO modules with bad replica groups are hand-written, labelled as such.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from xlagraph.cli.main import xlagraph

from tests.conftest import FIXTURES, ROOT
from tests.oracles.hashes_reference import IotaError, expand_iota_groups
from xlagraph.canonical import canonicalize
from xlagraph.diff import diff_files
from xlagraph.errors import InputError, ParseError
from xlagraph.parse.hlo import parse_hlo
from xlagraph.parse.input_files import MAX_INPUT_ENV, read_bytes
from xlagraph.parse.sources import split_spec
from xlagraph.render.text import render_diff_text

HLO = FIXTURES / "jax" / "pairs" / "constant_change" / "a.hlo"
SAVE = FIXTURES / "torch_xla" / "kept_alive" / "save_hlo.txt"
DUMP_DIR = FIXTURES / "jax" / "xla_dump"


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(xlagraph, list(args), env=env)


def one_line_error(result: Result, *must_contain: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("xlagraph: error: ")
    for text in must_contain:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def _special(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"special_{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "loop":
        (tmp_path / "loop_b").symlink_to(path)
        path.symlink_to(tmp_path / "loop_b")
    elif kind == "dir":
        path.mkdir()
    return path


SPECIAL = {
    "fifo": "FIFO",
    "zero": "character device",
    "loop": "symbolic link loop",
    "dir": "directory",
}


@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_special_file_is_refused_by_the_reader(tmp_path: Path, kind: str) -> None:
    path = _special(tmp_path, kind)
    with pytest.raises(InputError, match=SPECIAL[kind]):
        read_bytes(path)


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop"])
@pytest.mark.parametrize("command", ["diff", "graphs", "report", "check"])
def test_special_file_is_one_line_exit_2(tmp_path: Path, kind: str, command: str) -> None:
    path = str(_special(tmp_path, kind))
    args = {
        "diff": ["diff", path, str(HLO)],
        "graphs": ["graphs", path],
        "report": ["report", path],
        "check": ["check", path, "--max-graphs", "1"],
    }[command]
    one_line_error(run(*args), path)


def test_size_limit_names_itself(tmp_path: Path) -> None:
    big = tmp_path / "big.hlo"
    text = HLO.read_text()
    big.write_text(text + "\n" * (2 << 20))
    line = one_line_error(run("graphs", str(big), env={MAX_INPUT_ENV: "1"}), str(big), MAX_INPUT_ENV, "1 MB")
    assert "over the input limit" in line
    assert run("graphs", str(HLO), env={MAX_INPUT_ENV: "1"}).exit_code == 0


def test_size_limit_counts_a_whole_dump_directory(tmp_path: Path) -> None:
    folder = tmp_path / "dump"
    shutil.copytree(DUMP_DIR, folder)
    # Each file stays under the limit; together they are over it.
    for f in sorted(folder.glob("*optimizations.txt"))[:2]:
        f.write_text(f.read_text() + "\n" * (600 << 10))
    line = one_line_error(run("graphs", str(folder), env={MAX_INPUT_ENV: "1"}), str(folder), MAX_INPUT_ENV)
    assert "module_" not in line


def test_a_fifo_in_a_dump_directory_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dump"
    shutil.copytree(DUMP_DIR, folder)
    os.mkfifo(folder / "module_0099.jit_x.before_optimizations.txt")
    one_line_error(run("graphs", str(folder)), "FIFO")


@pytest.mark.parametrize("value", ["0", "-3", "lots", "١٠"])
def test_bad_limit_setting_is_one_line(value: str) -> None:
    one_line_error(run("graphs", str(HLO), env={MAX_INPUT_ENV: value}), MAX_INPUT_ENV)


# -- PATH#K ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", ["٣", "²", "３"])
def test_non_ascii_digits_are_refused(index: str) -> None:
    with pytest.raises(InputError, match="digits 0-9"):
        split_spec(f"{SAVE}#{index}")
    one_line_error(run("diff", f"{SAVE}#{index}", f"{SAVE}#0"), "digits 0-9")


def test_huge_index_is_refused_in_one_line() -> None:
    one_line_error(run("diff", f"{SAVE}#{'9' * 40}", f"{SAVE}#0"), "too large")


def test_ascii_index_and_hash_in_a_name() -> None:
    assert split_spec("dump.txt#3") == ("dump.txt", 3)
    assert split_spec("dir#x/file.hlo") == ("dir#x/file.hlo", None)


# -- iota replica groups ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expanded"),
    [
        ("[2,2]<=[4]", "{{0,1},{2,3}}"),
        ("[2,2]<=[2,2]T(1,0)", "{{0,2},{1,3}}"),
        ("[1,4]<=[4]", "{{0,1,2,3}}"),
        ("{{0,1},{2,3}}", "{{0,1},{2,3}}"),
    ],
)
def test_iota_groups_expand(value: str, expanded: str) -> None:
    assert expand_iota_groups(value) == expanded


@pytest.mark.parametrize(
    "value",
    [
        "[2,0]<=[0]",
        "[2,2]<=[4]T(0,1,2)",
        "[100000000,1]<=[100000000]",
        "[2,2]<=[5]",
        "[2,2]<=[2,2]T(0,0)",
        "[4]<=[4]",
        "[2,,2]<=[4]",
    ],
)
def test_bad_iota_groups_are_refused(value: str) -> None:
    with pytest.raises(IotaError):
        expand_iota_groups(value)


# Hand-written: an all-reduce over four devices whose replica groups are given as iota.
ALL_REDUCE = """HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(x), replica_groups=GROUPS, to_apply=sum
}
"""


def test_iota_and_explicit_groups_compare_equal() -> None:
    a = canonicalize(parse_hlo(ALL_REDUCE.replace("GROUPS", "[2,2]<=[4]"))).fingerprint
    b = canonicalize(parse_hlo(ALL_REDUCE.replace("GROUPS", "{{0,1},{2,3}}"))).fingerprint
    assert a == b


def test_bad_iota_in_a_module_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad_iota.hlo"
    path.write_text(ALL_REDUCE.replace("GROUPS", "[100000000,1]<=[100000000]"))
    try:
        module = parse_hlo(path.read_text(), str(path))
    except ParseError:
        return  # refused by the reader already
    with pytest.raises(ParseError, match="replica_groups"):
        canonicalize(module)
    one_line_error(run("graphs", str(path)), f"{path}:9:", "replica_groups")


def test_fixtures_exist() -> None:
    assert HLO.exists() and SAVE.exists() and DUMP_DIR.is_dir() and ROOT.is_dir()


# -- capture folders: every field validated, runs told apart ------------------------------------

TWO_RUNS = FIXTURES / "torch_xla" / "two_runs" / "capture"
BAD_VALUES: tuple[object, ...] = ("x", -1, 1.5, None, True, [], {}, [[1]], 1 << 60, float("nan"), "../../x")


def _copy_capture(tmp_path: Path) -> Path:
    if not TWO_RUNS.is_dir():
        pytest.fail(f"missing {TWO_RUNS}: run fixtures/torch_xla/two_runs/generate.py")
    dest = tmp_path / "capture"
    shutil.copytree(TWO_RUNS, dest)
    return dest


def _first_process(capture: Path) -> Path:
    return sorted(p for p in capture.iterdir() if p.is_dir())[0]


def _mutations() -> list[tuple[int, str, object]]:
    """(journal line, field, new value or `...` for deleted) for every field of every record
    of the first run's real journal."""
    lines = (_first_process(TWO_RUNS) / "journal.jsonl").read_text().splitlines()
    out: list[tuple[int, str, object]] = []
    for n, line in enumerate(lines):
        for key in json.loads(line):
            out.append((n, key, ...))
            out += [(n, key, v) for v in BAD_VALUES]
    return out


def _mutate_journal(capture: Path, line: int, key: str, value: object) -> Path:
    proc = _first_process(capture)
    lines = (proc / "journal.jsonl").read_text().splitlines()
    record = json.loads(lines[line])
    if value is ...:
        del record[key]
    else:
        record[key] = value
    lines[line] = json.dumps(record)
    (proc / "journal.jsonl").write_text("\n".join(lines) + "\n")
    return proc


def test_every_journal_field_mutated_reads_without_a_traceback(tmp_path: Path) -> None:
    from xlagraph.capture.reader import read_capture

    mutations = _mutations()
    assert len(mutations) > 200
    skipped = 0
    for k, (line, key, value) in enumerate(mutations):
        capture = _copy_capture(tmp_path / str(k))
        proc = _mutate_journal(capture, line, key, value)
        (log,) = read_capture(proc)  # never raises: a bad record is skipped
        noted = [n for n in log.notes if "bad record(s) skipped" in n]
        skipped += bool(noted)
        assert len(noted) <= 1
        shutil.rmtree(tmp_path / str(k))
    assert skipped > len(mutations) // 3


@pytest.mark.parametrize("k", range(0, 400, 37))
def test_mutated_journal_through_report_and_check(tmp_path: Path, k: int) -> None:
    mutations = _mutations()
    line, key, value = mutations[k % len(mutations)]
    capture = _copy_capture(tmp_path)
    _mutate_journal(capture, line, key, value)
    for args in (
        ("report", str(capture), "--run", "1"),
        ("check", str(capture), "--max-graphs", "1", "--run", "1"),
    ):
        result = run(*args)
        assert result.exit_code in (0, 1), (args, line, key, value, result.output, result.exception)
        assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "line",
    [
        "[1, 2]",
        '"text"',
        "3",
        '{"k": 7}',
        '{"v": "no kind"}',
        "[" * 100_000 + "]" * 100_000,
        '{"k": "graph", "id": 0, "hash": "h", "module": "/etc/passwd"}',
        '{"k": "graph", "id": 0, "hash": "h", "tensors": "tensors/../../secret"}',
        '{"k": "graph", "id": 0, "hash": "h", "tensors": "tensors/x.txt", "holders": "tensors/../../secret"}',
        '{"k": "step", "i": 9, "t0": 5.0, "t1": 1.0}',
        '{"k": "step", "i": 9, "e": [[0, 1, 0]]}',
        '{"k": "frames", "id": 0, "v": [["f", "file.py", "12"]]}',
        '{"k": "future_kind", "anything": [1, {"x": null}]}',
    ],
)
def test_bad_or_unknown_records_are_skipped_and_counted(tmp_path: Path, line: str) -> None:
    from xlagraph.capture.reader import read_capture

    capture = _copy_capture(tmp_path)
    proc = _first_process(capture)
    with (proc / "journal.jsonl").open("a") as f:
        f.write(line + "\n")
    (log,) = read_capture(proc)
    noted = [n for n in log.notes if "bad record(s) skipped" in n]
    if "future_kind" in line:
        assert not noted  # newer writers stay readable
    else:
        assert noted and "line " in noted[0]
    assert all("/etc/passwd" not in g.module and "secret" not in g.tensors_note for g in log.graphs.values())


@pytest.mark.parametrize(
    ("key", "value"), [("debug_level", "x"), ("rank", -2), ("world_size", 0), ("notes", "x")]
)
def test_bad_meta_fields_are_dropped_with_a_note(tmp_path: Path, key: str, value: object) -> None:
    from xlagraph.capture.reader import read_capture

    capture = _copy_capture(tmp_path)
    proc = _first_process(capture)
    meta = json.loads((proc / "meta.json").read_text())
    meta[key] = value
    (proc / "meta.json").write_text(json.dumps(meta))
    (log,) = read_capture(proc)
    assert any(f"bad {key!r}" in n for n in log.notes)


@pytest.mark.parametrize("meta", ["[]", "nonsense", "{" * 50_000])
def test_unreadable_meta_is_a_note(tmp_path: Path, meta: str) -> None:
    from xlagraph.capture.reader import read_capture

    capture = _copy_capture(tmp_path)
    proc = _first_process(capture)
    (proc / "meta.json").write_text(meta)
    (log,) = read_capture(proc)
    assert any("meta.json" in n for n in log.notes)


@pytest.mark.parametrize("name", ["journal.jsonl", "meta.json", "pt_xla_debug.txt"])
@pytest.mark.parametrize("kind", ["fifo", "zero", "loop", "dir"])
def test_special_files_in_a_capture_folder_are_one_line(tmp_path: Path, name: str, kind: str) -> None:
    capture = _copy_capture(tmp_path)
    proc = _first_process(capture)
    target = proc / name
    if target.exists():
        target.unlink()
    special = _special(tmp_path, kind)
    if kind in ("fifo", "dir"):
        os.rename(special, target)
    else:
        target.symlink_to(special if kind == "loop" else "/dev/zero")
    if name == "pt_xla_debug.txt":  # read only for a run that did not exit cleanly
        journal = proc / "journal.jsonl"
        journal.write_text(
            "".join(x + "\n" for x in journal.read_text().splitlines() if '"k": "end"' not in x)
        )
        journal.write_text(
            "".join(x + "\n" for x in journal.read_text().splitlines() if '"k":"end"' not in x)
        )
    for args in (("report", str(capture), "--run", "1"), ("check", str(capture), "--max-graphs", "1")):
        one_line_error(run(*args), name)


def test_a_fifo_tensor_report_is_a_note_not_a_hang(tmp_path: Path) -> None:
    from xlagraph.capture.reader import read_capture

    capture = _copy_capture(tmp_path)
    proc = _first_process(capture)
    report = next((proc / "tensors").iterdir())
    report.unlink()
    os.mkfifo(report)
    (log,) = read_capture(proc)
    assert any("FIFO" in g.tensors_note for g in log.graphs.values())


def test_two_runs_in_one_folder_are_told_apart(tmp_path: Path) -> None:
    from xlagraph.capture.reader import read_capture_runs

    runs = read_capture_runs(TWO_RUNS)
    assert [r.number for r in runs] == [1, 2]
    assert runs[0].start < runs[1].start
    assert [len(r.logs[0].graphs) for r in runs] == [1, 2]

    latest = run("check", str(TWO_RUNS), "--max-graphs", "1")
    assert latest.exit_code == 1
    assert latest.stdout.startswith(f"note: {TWO_RUNS} holds 2 runs: run 1 started ")
    assert "showing run 2 (the latest)" in latest.stdout
    assert run("check", str(TWO_RUNS), "--max-graphs", "1", "--run", "1").exit_code == 0
    assert run("check", str(TWO_RUNS), "--max-graphs", "1", "--run", "all").exit_code == 1
    one_line_error(run("check", str(TWO_RUNS), "--max-graphs", "1", "--run", "3"), "holds 2 runs")
    assert run("check", str(TWO_RUNS), "--max-graphs", "1", "--run", "٢").exit_code == 2

    doc = json.loads(run("report", str(TWO_RUNS), "--json").stdout)
    assert [(r["run"], r["selected"]) for r in doc["runs"]] == [(1, False), (2, True)]
    assert "holds 2 runs" in doc["runs_note"]
    text = run("report", str(TWO_RUNS)).stdout
    assert text.startswith("note: ") and "--run all" in text.splitlines()[0]


def test_one_process_folder_is_one_run() -> None:
    result = run("check", str(_first_process(TWO_RUNS)), "--max-graphs", "1")
    assert result.exit_code == 0 and not result.stdout.startswith("note:")


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_hlo_file_in_a_capture_is_never_opened(tmp_path: Path, kind: str) -> None:
    capture = _copy_capture(tmp_path)
    proc = _first_process(capture)
    module = next((proc / "hlo").glob("*before_optimizations.txt"))
    module.unlink()
    if kind == "fifo":
        os.mkfifo(module)
    else:
        module.symlink_to("/dev/zero")
    result = run("report", str(capture), "--run", "1")
    assert result.exit_code == 0, result.output
    assert "listed in the journal but missing" in result.output


def test_a_small_file_reads_under_a_small_address_space() -> None:
    """The size limit is an upper bound, never an allocation: 1.5 GB of address space is plenty."""
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))\n"
        "from xlagraph.cli.main import main\n"
        f"sys.argv = ['xlagraph', 'graphs', {str(HLO)!r}]\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_source_files_named_by_a_dump_are_read_only_when_regular(tmp_path: Path, kind: str) -> None:
    """A dump's metadata may name any path as the source of an op: a FIFO there must not block
    the diff that looks up the user's line, nor a device be read without end."""
    target = tmp_path / "src.py"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target = Path("/dev/zero")
    for side in ("a", "b"):
        text = (FIXTURES / "torch_xla" / "ragged_batch" / f"{side}.hlo").read_text()
        text = re.sub(r'source_file="[^"]*"', f'source_file="{target}"', text)
        (tmp_path / f"{side}.hlo").write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "xlagraph.cli.main", "diff", str(tmp_path / "a.hlo"), str(tmp_path / "b.hlo")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 1, proc.stderr
    assert "parameter_shape" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_constants_neither_dump_prints_are_said_to_be_compared_by_shape(tmp_path: Path) -> None:
    # Hand-written (XLA prints literals of more than 10 elements as {...} unless asked not to).
    text = "HloModule m\n\nENTRY main {\n  p0 = f32[16] parameter(0)\n  c = f32[16] constant({...})\n"
    text += "  ROOT a = f32[16] add(p0, c)\n}\n"
    (tmp_path / "a.hlo").write_text(text)
    (tmp_path / "b.hlo").write_text(text)
    result = diff_files(str(tmp_path / "a.hlo"), str(tmp_path / "b.hlo"))
    # The values are in neither text: the same file twice, or two programs baking other values.
    assert result.verdict == "undetermined" and not result.causes and result.unseen == ("c",)
    assert any("in both dumps" in n and "--xla_dump_large_constants" in n for n in result.notes)
    text_out = render_diff_text(result)
    assert text_out.startswith("undetermined: the graphs print the same, but 1 constant whose values")
    cli = CliRunner().invoke(xlagraph, ["diff", str(tmp_path / "a.hlo"), str(tmp_path / "b.hlo"), "--json"])
    assert cli.exit_code == 1 and json.loads(cli.output)["unseen_constants"] == ["c"]


def test_a_failing_recognizer_costs_its_pattern_not_the_report(monkeypatch):
    """A bug in one recognizer: users get the unrecognized causes and a one-line warning."""
    from xlagraph.diagnose import recognizers
    from xlagraph.diagnose.evidence import Recognizer
    from xlagraph.errors import XlagraphWarning

    def broken(evidence, pending):
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setenv("XLAGRAPH_STRICT", "0")
    monkeypatch.setattr(recognizers, "ORDER", (Recognizer("broken", broken),))
    monkeypatch.setattr(recognizers, "FINAL", ())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        causes = recognizers.recognize(None, ())  # type: ignore[arg-type]
    assert causes == ()
    assert [w.category for w in seen] == [XlagraphWarning]
    assert "recognizer broken failed (OverflowError" in str(seen[0].message)


def test_an_internal_error_is_one_line_and_exit_2():
    """`main()` (the installed command) turns a bug of ours into one line, never a traceback."""
    hlo = FIXTURES / "torch_xla" / "kept_alive" / "save_hlo.txt"
    script = (
        "import xlagraph.api as api\n"
        "def boom(*a, **k): raise RuntimeError('boom')\n"
        "api.diff = boom\n"
        f"import sys; sys.argv = ['xlagraph', 'diff', '{hlo}#0', '{hlo}#1']\n"
        "from xlagraph.cli.main import main; main()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLAGRAPH_TRACEBACK"}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2, r
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "internal error (RuntimeError: boom)" in r.stderr


def _staggered(tmp_path: Path, ranks: list[int]) -> Path:
    """A real 4-rank torchrun capture whose processes are made to run one after another (each
    starts a second after the previous one ended), keeping only `ranks` (repeats: reruns)."""
    src = sorted((FIXTURES / "torch_xla" / "ranks" / "even" / "capture").iterdir())
    by_rank = {json.loads((d / "meta.json").read_text())["rank"]: d for d in src}
    dest = tmp_path / "capture"
    t = 1_800_000_000.0
    for k, rank in enumerate(ranks):
        folder = dest / f"host-{1000 + k}"
        shutil.copytree(by_rank[rank], folder)
        meta = json.loads((folder / "meta.json").read_text())
        meta["start_time"], meta["end_time"] = t, t + 2.0
        (folder / "meta.json").write_text(json.dumps(meta))
        t += 3.0
    return dest


def test_ranks_of_one_world_are_one_run_even_one_after_another(tmp_path: Path) -> None:
    """A loaded machine can start a rank after another has ended: the ranks of one world are still
    one run. The same folder used again (rank 0 once more) begins the next run."""
    from xlagraph.capture.reader import read_capture_runs

    runs = read_capture_runs(_staggered(tmp_path / "one", [1, 0, 3, 2]))
    assert len(runs) == 1 and len(runs[0].logs) == 4
    runs = read_capture_runs(_staggered(tmp_path / "two", [0, 1, 2, 3, 0, 1, 2, 3]))
    assert [len(r.logs) for r in runs] == [4, 4]
