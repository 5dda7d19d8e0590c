"""Bad input never hangs, never takes unbounded memory and never gives a traceback.

Special files (FIFO, a link to /dev/zero, a symbolic link loop, a directory where a file is
expected) and oversized files are refused in one line with exit status 2, for a single file, a
--xla_dump_to directory and every file of a capture folder. Iota replica groups are validated and
bounded; `PATH#K` takes ASCII digits only. Modules and capture folders are real (fixtures/,
tests/data); the small HLO modules with bad replica groups are hand-written, labelled as such.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from xlagraph.cli.main import xlagraph

from tests.conftest import FIXTURES, ROOT
from xlagraph.canonical import canonicalize
from xlagraph.canonical.hashes import IotaError, expand_iota_groups
from xlagraph.errors import InputError, ParseError
from xlagraph.parse.hlo import parse_hlo
from xlagraph.parse.sources import MAX_INPUT_ENV, read_bytes, split_spec

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
