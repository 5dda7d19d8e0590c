"""The same answer on any machine (issue 18, part 2).

A capture is reported from another path and another working directory, in a process where an
audit hook refuses to open any file of the installed torch, torch_xla or transformers packages or
of the capture's original location: the causes, lines and fixes are the ones reported in place,
and no path of the capturing machine is printed. Committed fixtures hold no absolute path.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

CORPUS = FIXTURES / "torch_xla" / "corpus"

# Runs the CLI with an audit hook that fails on any open under the folders given in argv[1].
_AUDITED = """
import os, sys
forbidden = [p for p in sys.argv[1].split(os.pathsep) if p]
def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if any(path == p or path.startswith(p.rstrip("/") + "/") for p in forbidden):
            raise RuntimeError("forbidden open: " + path)
sys.addaudithook(hook)
sys.argv = ["xlagraph", *sys.argv[2:]]
from xlagraph.cli.main import main
main()
"""


def _package_dirs() -> list[str]:
    """The installed torch, torch_xla and transformers package folders (found without importing)."""
    import importlib.util

    out = []
    for name in ("torch", "torch_xla", "transformers"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            out += [os.path.realpath(p) for p in spec.submodule_search_locations]
    return out


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLAGRAPH_", "PT_XLA_DEBUG"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _report(src: Path, cwd: Path, forbidden: list[str], *extra: str) -> str:
    args = [sys.executable, "-c", _AUDITED, os.pathsep.join(forbidden), "report", str(src), *extra]
    proc = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "forbidden open" not in proc.stderr, proc.stderr[-3000:]
    return proc.stdout


def _explained(report_json: str) -> list:
    """Per recompile: each cause's kind, summary, lines, library lines and fix."""
    data = json.loads(report_json)
    procs = data.get("processes") or [data]
    out = []
    for p in procs:
        for r in p.get("recompiles", []):
            causes = r.get("causes", [])
            out.append(
                [
                    r.get("call_site"),
                    [
                        (c.get("kind"), c.get("summary"), c.get("sources"), c.get("library"), c.get("hint"))
                        for c in causes
                    ],
                ]
            )
    return out


def _assert_same_anywhere(cap: Path, parent: Path, forbidden_extra: list[str], machine: list[str]) -> None:
    in_place = _report(cap, ROOT, [])
    in_place_json = _report(cap, ROOT, [], "--json")
    moved = parent / "elsewhere" / "cap"
    shutil.copytree(cap, moved)
    other = parent / "other_cwd"
    other.mkdir()
    forbidden = [*_package_dirs(), os.path.realpath(cap), *forbidden_extra]
    text = _report(Path(os.path.relpath(moved, other)), other, forbidden)
    as_json = _report(moved, other, forbidden, "--json")
    html = other / "r.html"
    _report(moved, other, forbidden, "--html", str(html))
    explained = _explained(as_json)
    assert explained and any(causes for _, causes in explained), as_json[:2000]
    assert explained == _explained(in_place_json)
    # The text differs only in the folder named on its first line.
    assert text.split("\n")[1:] == in_place.split("\n")[1:]
    for out in (text, as_json, html.read_text(encoding="utf-8")):
        for path in machine:
            assert path not in out
        assert "site-packages" not in out and "/root/" not in out


def test_real_capture_moved_reports_the_same(tmp_path: Path) -> None:
    """(a) torch_xla under XLAGRAPH_CAPTURE, reported moved, from elsewhere, torch unreadable."""
    made = tmp_path / "made"
    made.mkdir()
    shutil.copy(FIXTURES / "torch_xla" / "scenarios" / "kept_alive.py", made / "train.py")
    env = {**_env(), "PJRT_DEVICE": "CPU", "XLAGRAPH_CAPTURE": str(made / "cap")}
    proc = subprocess.run(
        [sys.executable, "train.py"], cwd=made, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (proc_dir,) = [p for p in (made / "cap").iterdir() if p.is_dir()]
    index = json.loads((proc_dir / "sources" / "index.json").read_text())
    assert "train.py" in index["files"] and "torch/optim/sgd.py" in index["files"]
    assert index["files"]["torch/optim/sgd.py"]["lib"] and not index["files"]["train.py"]["lib"]
    for f in proc_dir.rglob("*"):
        if f.is_file() and f.suffix != ".z":
            body = f.read_text(encoding="utf-8", errors="replace")
            assert str(tmp_path) not in body and "site-packages" not in body, f
    _assert_same_anywhere(made / "cap", tmp_path, [str(made)], [str(made), str(ROOT)])


@pytest.mark.parametrize("name", ["tu_bert_clip_every_k", "h8_phi3_clip_threshold_ramp"])
def test_corpus_capture_moved_reports_the_same(tmp_path: Path, name: str) -> None:
    """(b) a stored corpus capture, copied, decompressed, reported from elsewhere."""
    cap = tmp_path / "in_place" / name
    shutil.copytree(CORPUS / "captures" / name, cap)
    for f in cap.rglob("*.xz"):
        f.with_suffix("").write_bytes(lzma.decompress(f.read_bytes()))
        f.unlink()
    _assert_same_anywhere(cap, tmp_path, [str(CORPUS)], [str(ROOT), str(cap)])


def test_no_fixture_holds_an_absolute_path() -> None:
    """(c) fixtures/ and tests/data: no /work/, /root/, /home/, /tmp/ or site-packages path."""
    sys.path.insert(0, str(FIXTURES))
    try:
        from relocate import still_absolute
    finally:
        sys.path.remove(str(FIXTURES))
    bad = still_absolute(FIXTURES) + still_absolute(ROOT / "tests" / "data")
    # fixtures/xla_versions keeps public dumps byte-exact (their counts are XLA's on that text):
    # the paths in them are their authors' machines', not ours, and no report reads them as ours.
    theirs = [b for b in bad if b.startswith("fixtures/xla_versions/modules/")]
    ours = [b for b in bad if b not in theirs]
    assert not ours, ours[:20]
    assert not [b for b in theirs if re.search(r"/work/main/|/root/\.pyenv/", _text(b))], theirs


def test_library_paths_of_any_machine_are_portable() -> None:
    from xlagraph.source_paths import is_library_path, portable_path

    for path, want in [
        ("/opt/venv/lib/python3.10/site-packages/torch/optim/sgd.py", "torch/optim/sgd.py"),
        ("/usr/lib/python3/dist-packages/torch_xla/core/xla_model.py", "torch_xla/core/xla_model.py"),
        (
            "C:\\Py\\Lib\\site-packages\\transformers\\models\\bart\\modeling_bart.py",
            "transformers/models/bart/modeling_bart.py",
        ),
        ("/usr/lib/python3.12/contextlib.py", "contextlib.py"),
        ("/src/pytorch/xla/torch_xla/core/xla_model.py", "torch_xla/core/xla_model.py"),
        ("torch/optim/sgd.py", "torch/optim/sgd.py"),
        ("fixtures/torch_xla/scenarios/kept_alive.py", "fixtures/torch_xla/scenarios/kept_alive.py"),
    ]:
        assert portable_path(path) == want
    assert is_library_path("torch/optim/sgd.py") and is_library_path("contextlib.py")
    assert not is_library_path("fixtures/torch_xla/scenarios/kept_alive.py")
    assert not is_library_path("train.py") and not is_library_path("test/train.py")
    # typing_extensions' @deprecated wrapper sits between a script and torch_xla 2.9's xm.mark_step
    assert is_library_path("typing_extensions.py") and not is_library_path("scripts/typing_extensions.py")


def test_source_lines_never_read_from_installed_packages(tmp_path: Path) -> None:
    """Without stored sources a library line is unknown, whatever this machine has installed."""
    import torch

    from xlagraph.diagnose.frames import SourceText, reading_sources, source_line

    sgd = str(Path(torch.__file__).parent / "optim" / "sgd.py")
    (tmp_path / "mine.py").write_text("a = 1\nb = 2\n")
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        assert source_line(sgd, 10) == ""
        assert source_line("torch/optim/sgd.py", 10) == ""
        assert source_line("mine.py", 2) == "b = 2\n"


def _text(rel: str) -> str:
    return (ROOT / rel).read_text(errors="replace")


# Where the run is killed, and the line of the script the kill replaces. After the sync: every
# dump is paired and portable. Mid-step, after `.item()` compiled a graph of its own: that graph's
# dump was written by XLA but never paired (nor made portable) by the capture, whose step hook
# never ran; the reader pairs it from the leftover PT_XLA_DEBUG text.
_KILLS = {
    "after_sync": (
        "    torch_xla.sync()\n",
        """    torch_xla.sync()
    if step == 4:  # killed before its end: no exit handler runs
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
""",
    ),
    "unpaired_dump": (
        "    optimizer.step()\n",
        """    optimizer.step()
    if step >= 3:  # .item() compiles a graph of its own; the scalar 1 is baked in, 2 is not
        print((loss * (1 if step == 3 else 2)).item(), flush=True)
    if step == 4:  # killed before the step's end pairs the dump of that .item()'s graph
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
""",
    ),
}


@pytest.mark.parametrize("where", sorted(_KILLS))
def test_killed_run_capture_is_portable(tmp_path: Path, where: str) -> None:
    """(c) a run killed before its end: its capture is portable as it stands (sources stored and
    dumps made portable as the run goes), and reads the same moved, torch unreadable. A dump XLA
    wrote that the capture never paired keeps the capturing machine's absolute paths: the report
    names its lines relative to the run's working directory (meta.json) and prints no such path."""
    made = tmp_path / "made"
    made.mkdir()
    script = (FIXTURES / "torch_xla" / "scenarios" / "kept_alive.py").read_text()
    line, kill = _KILLS[where]
    assert script.count(line) == 1
    (made / "train.py").write_text(script.replace(line, kill))
    env = {**_env(), "PJRT_DEVICE": "CPU", "XLAGRAPH_CAPTURE": str(made / "cap")}
    proc = subprocess.run(
        [sys.executable, "train.py"], cwd=made, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == -9, proc.stderr[-3000:]
    (proc_dir,) = [p for p in (made / "cap").iterdir() if p.is_dir()]
    index = json.loads((proc_dir / "sources" / "index.json").read_text())
    assert "train.py" in index["files"] and "torch/optim/sgd.py" in index["files"]
    journal = (proc_dir / "journal.jsonl").read_text()
    # What capture wrote holds no path of this machine; torch_xla's own PT_XLA_DEBUG text (left
    # unread by the killed run) does, and so do the dumps XLA wrote that the capture never
    # paired; meta.json keeps the run's cwd and import roots to read them by.
    unpaired = []
    for f in proc_dir.rglob("*"):
        if f.is_file() and f.suffix != ".z" and "debug" not in f.name and f.name != "meta.json":
            body = f.read_text(encoding="utf-8", errors="replace")
            if f.parent.name == "hlo" and f"hlo/{f.name}" not in journal:
                unpaired.append(f.name)
                continue
            assert str(tmp_path) not in body and "site-packages" not in body, f
    if where == "unpaired_dump":
        # the case this parameter is for: a dump left unpaired, with this machine's paths in it
        assert any(str(made) in (proc_dir / "hlo" / n).read_text() for n in unpaired), unpaired
        # and its graph's recompile is named from that dump's lines: the baked-in 1 at the .item()
        report = json.dumps(_explained(_report(made / "cap", made, [], "--json")))
        assert "constant_value" in report and '"train.py:35"' in report, report[:3000]
    _assert_same_anywhere(made / "cap", tmp_path, [str(made)], [str(made), str(ROOT)])


def test_dumps_inside_a_capture_read_its_stored_sources(tmp_path: Path, monkeypatch) -> None:
    """`xlagraph diff` on the HLO files of a capture folder (copied anywhere) reads source lines
    from that capture's stored sources, not from the analysing machine."""
    import xlagraph.report.build as build
    from xlagraph import api
    from xlagraph.diagnose.frames import SourceText, reading_sources, source_line

    cap = tmp_path / "moved" / "tu_bert_clip_every_k"
    shutil.copytree(CORPUS / "captures" / "tu_bert_clip_every_k", cap)
    for f in cap.rglob("*.xz"):
        f.with_suffix("").write_bytes(lzma.decompress(f.read_bytes()))
        f.unlink()
    a, b = sorted(str(p) for p in (cap / "hlo").glob("*.txt"))
    user = "scripts/tu_bert_clip_every_k.py"
    stored = build.source_text_near([a])
    assert stored.stored is not None and stored.stored.knows(user)
    with reading_sources(stored):
        assert "import" in "".join(source_line(user, n) for n in range(1, 30))
    assert build.source_text_near([str(tmp_path / "x.hlo")]).stored is None
    seen: list[list[str]] = []

    def spy(paths):
        seen.append(list(paths))
        return SourceText()

    import xlagraph.report.source_text as near  # where a diff reads it (without the report's code)

    monkeypatch.setattr(near, "source_text_near", spy)
    api.diff(f"{a}#0", b)
    assert seen == [[a, b]]


def test_xlagraphs_own_frames_are_library_wherever_it_is_installed(tmp_path: Path) -> None:
    """An editable install is on no `sys.path` root: the capture writes its own files as
    `xlagraph/...` marked library (not the bare name, not the machine's path), and the analysis
    reads those and the bare capture-module names earlier captures wrote as library code."""
    import xlagraph.capture as capture
    from xlagraph.capture.stored_sources import Relativizer
    from xlagraph.source_paths import is_library_path

    own = os.path.join(os.path.dirname(capture.__file__), "_tensors_report.py")
    rel = Relativizer(cwd=str(tmp_path))
    assert rel(own, 87) == "xlagraph/capture/_tensors_report.py" and rel.library == {rel(own)}
    assert is_library_path("xlagraph/capture/_tensors_report.py") and is_library_path("_tensors_report.py")
    assert not is_library_path("train.py")


def test_a_guard_comments_cut_path_is_made_relative() -> None:
    """torch's `shorten_filename` leaves a tail of the making machine's folder in a guard's comment;
    relocation gives it the form capture writes (the corpus relative to its folder)."""
    sys.path.insert(0, str(FIXTURES))
    try:
        from relocate import cut_guard_tails
    finally:
        sys.path.remove(str(FIXTURES))
    assert cut_guard_tails("if x:  # GUILTY  # ork/wt/h-a/fixtures/torch_xla/corpus/scripts/s.py:3 in f") == (
        "if x:  # GUILTY  # scripts/s.py:3 in f"
    )
    assert cut_guard_tails("# main/fixtures/torch_xla/compiled/scenarios/a.py:22") == (
        "# fixtures/torch_xla/compiled/scenarios/a.py:22"
    )
    assert cut_guard_tails("# fixtures/a.py:1  # scripts/b.py:2") == "# fixtures/a.py:1  # scripts/b.py:2"
