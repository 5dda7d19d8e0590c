"""Capture with real torch_xla 2.9 on CPU: unmodified scripts run under XLAGRAPH_CAPTURE in
subprocesses (the installed .pth start-up hook does the rest), then read back.

The independent runs start together in a module fixture, two at a time (the machine has two
cores and each run spends most of its time importing torch_xla).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT
from xlagraph.capture import files as fmt
from xlagraph.capture import read_capture
from xlagraph.parse.compressed import compressed_twin
from xlagraph.parse.input_files import read_bytes
from xlagraph.parse.pt_xla_debug import UNREPORTED_CAUSE
from xlagraph.report import build_report
from xlagraph.runlog import RunLog

SCENARIOS = FIXTURES / "torch_xla" / "scenarios"
SCRIPTS = Path(__file__).parent / "data" / "scripts"
COUNT = SCRIPTS / "run_and_count.py"
SCENARIO_NAMES = sorted(p.stem for p in SCENARIOS.glob("*.py") if not p.stem.startswith("_"))
SYNC = "user torch_xla.sync"
ITEM = "most likely user code trying to access tensor value before torch_xla.sync"
STARTED = "xlagraph capture: writing "
TIMEOUT = 240
CLI_RUN = ["-m", "xlagraph.cli.main", "run", "--out"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XLAGRAPH_", "PT_XLA_DEBUG", "_XLAGRAPH"))
        and k not in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "XLA_FLAGS", "XLA_SAVE_TENSORS_FILE")
    }
    env["PJRT_DEVICE"] = "CPU"
    env.update(extra)
    return env


@dataclass(frozen=True)
class Run:
    name: str
    out: Path
    returncode: int
    stdout: str
    stderr: str

    @property
    def torch_xla_compiles(self) -> int:
        m = re.search(r"XLAGRAPH_TEST_COMPILES=(\d+)", self.stdout)
        assert m, self.stdout + self.stderr
        return int(m.group(1))

    def logs(self) -> list[RunLog]:
        return read_capture(self.out)


def _run(
    name: str, root: Path, argv: list[str], env: dict[str, str] | None = None, capture: bool = True
) -> Run:
    out = root / name
    extra = {"XLAGRAPH_CAPTURE": str(out)} if capture else {}
    env = clean_env(**extra, **(env or {}))
    proc = subprocess.run(
        [sys.executable, *argv], env=env, capture_output=True, text=True, timeout=TIMEOUT, cwd=root
    )
    return Run(name, out, proc.returncode, proc.stdout, proc.stderr)


def _jobs() -> dict[str, tuple[list[str], dict[str, str]]]:
    jobs = {f"scenario-{n}": ([str(COUNT), str(SCENARIOS / f"{n}.py")], {}) for n in SCENARIO_NAMES}
    jobs.update(
        {
            "fail-after-3": (
                [str(COUNT), str(SCENARIOS / "clean_loop.py")],
                {"XLAGRAPH_CAPTURE_FAIL_AFTER": "3"},
            ),
            "xmp-spawn": ([str(SCRIPTS / "xmp_spawn.py")], {}),
            "mp-child": ([str(SCRIPTS / "mp_child.py")], {}),
            "compile-loader": ([str(SCRIPTS / "compile_and_loader.py")], {}),
            "cpu-fallback": ([str(COUNT), str(SCRIPTS / "cpu_fallback.py")], {}),
            "stable-10": ([str(SCRIPTS / "stable_loop.py"), "10"], {}),
            "stable-1000": ([str(SCRIPTS / "stable_loop.py"), "1000"], {}),
            "max-mb-0": (
                [str(SCRIPTS / "stable_loop.py"), "3"],
                {"XLAGRAPH_MAX_MB": "0", "XLAGRAPH_SOURCE_LINES": "0"},
            ),
        }
    )
    return jobs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    root = tmp_path_factory.mktemp("captures")
    jobs = _jobs()
    api = {
        "api-early": [str(SCRIPTS / "api_capture.py"), str(root / "api-early"), "early"],
        "api-late": [str(SCRIPTS / "api_capture.py"), str(root / "api-late"), "late"],
        "cli-run": [
            *CLI_RUN,
            str(root / "cli-run"),
            "--",
            sys.executable,
            str(SCRIPTS / "stable_loop.py"),
            "3",
        ],
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(_run, name, root, argv, env) for name, (argv, env) in jobs.items()}
        futures.update({name: pool.submit(_run, name, root, argv, None, False) for name, argv in api.items()})
        return {name: f.result() for name, f in futures.items()}


def _single(run: Run) -> RunLog:
    assert run.returncode == 0, run.stderr[-3000:]
    logs = run.logs()
    assert len(logs) == 1, [log.process for log in logs]
    return logs[0]


def _portable(script: Path) -> set[str]:
    """How a capture names a script run from outside its working directory: relative to the
    sys.path entry it lies under, its own folder (sys.path[0]) or the repository root where
    PYTHONPATH names it (a developer's worktree); never absolute."""
    return {script.relative_to(ROOT).as_posix(), script.name}


def _cause_line(script: Path) -> int:
    return next(i for i, line in enumerate(script.read_text().splitlines(), 1) if "# CAUSE" in line)


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_scenario_capture_agrees_with_torch_xla(runs: dict[str, Run], name: str) -> None:
    run = runs[f"scenario-{name}"]
    log = _single(run)
    compiled = [s for s in log.syncs if s.compiled]
    # every compile is a distinct graph, and their number is torch_xla's own count
    assert len({s.graph_hash for s in compiled}) == len(compiled) == run.torch_xla_compiles
    assert log.compiles_reported == run.torch_xla_compiles
    assert sum(step.compiles for step in log.steps) == run.torch_xla_compiles
    assert [st.index for st in log.steps] == list(range(len(log.steps))) and len(log.steps) >= 4
    for step in log.steps:
        mine = [s for s in log.syncs if s.step == step.index]
        assert step.executions == len(mine) >= 1
        assert mine[-1].cause == SYNC  # the step ends with its marker's own execution
    # Frames name the script by its portable path: it runs from outside the working directory,
    # so relative to the sys.path entry it lies under: its own folder (sys.path[0]), or the
    # repository root where PYTHONPATH names it (a developer's worktree). Never absolute.
    portable = _portable(SCENARIOS / f"{name}.py")
    assert all(any(f.file in portable for f in s.frames) for s in log.syncs)
    assert all(s.compile_seconds > 0 for s in compiled)
    for s in compiled:
        graph = log.graphs[s.graph_hash]
        assert graph.module.endswith(".txt.xz")  # compressed at exit; the journal names the .txt
        text = read_bytes(graph.module).decode()
        assert text.startswith("HloModule ") and "source_line=" in text  # XLA_HLO_DEBUG metadata
    assert not [n for n in log.notes if "check failed" in n or "incomplete" in n]
    assert STARTED in run.stderr and run.stderr.count(STARTED) == 1
    hlo = Path(log.source) / fmt.HLO_DIR
    assert sorted(p.name for p in hlo.iterdir()) == sorted(
        Path(log.graphs[s.graph_hash].module).name for s in compiled
    )


def test_clean_loop_compiles_one_graph(runs: dict[str, Run]) -> None:
    log = _single(runs["scenario-clean_loop"])
    assert runs["scenario-clean_loop"].torch_xla_compiles == 1
    assert [(s.step, s.compiled) for s in log.syncs] == [(0, True)] + [(i, False) for i in range(1, 6)]
    assert len({s.graph_hash for s in log.syncs}) == 1
    (graph,) = log.graphs.values()
    assert graph.tensors and all(t.frames for t in graph.tensors)  # report before step 0, XLA_IR_DEBUG on


def test_item_mid_step_records_the_implicit_sync(runs: dict[str, Run]) -> None:
    log = _single(runs["scenario-item_mid_step"])
    script = SCENARIOS / "item_mid_step.py"
    line = _cause_line(script)
    implicit = [s for s in log.syncs if s.cause == ITEM]
    assert [s.step for s in implicit] == [2, 3, 4, 5]
    assert implicit[0].compiled and not any(s.compiled for s in implicit[1:])
    portable = _portable(script)
    assert all(s.frames[0].file in portable and s.frames[0].line == line for s in implicit)
    assert [st.executions for st in log.steps] == [1, 1, 2, 2, 2, 2]
    graph = log.graphs[implicit[0].graph_hash]
    assert not graph.tensors and "implicit sync" in graph.tensors_note


def test_run_killed_with_sigkill_still_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    env = clean_env(XLAGRAPH_CAPTURE=str(out))
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "long_loop.py"), "120"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            journals = list(out.glob(f"*/{fmt.JOURNAL}"))
            if journals and journals[0].read_bytes().count(b'"k":"step"') >= 20:
                break
            assert proc.poll() is None, "the training loop ended before it was killed"
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    (log,) = read_capture(out)
    assert len(log.steps) >= 20 and log.compiles_reported is not None and log.compiles_reported >= 1
    assert any("did not exit cleanly" in n for n in log.notes)
    assert sum(s.compiled for s in log.syncs) == log.compiles_reported
    # the same folder with its last record cut in the middle, as a kill during a write leaves it
    journal = Path(log.source) / fmt.JOURNAL
    data = journal.read_bytes()
    journal.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 12])
    (cut,) = read_capture(out)
    assert any("last record is incomplete" in n for n in cut.notes)
    assert len(cut.steps) >= len(log.steps) - 2


def test_error_inside_capture_is_logged_once_and_training_goes_on(runs: dict[str, Run]) -> None:
    run = runs["fail-after-3"]
    assert run.returncode == 0 and "final loss" in run.stdout
    assert run.torch_xla_compiles == 1
    assert run.stderr.count("xlagraph capture: disabled after error") == 1
    assert "XLAGRAPH_CAPTURE_FAIL_AFTER=3 test hook" in run.stderr
    log = _single(run)
    assert [st.executions for st in log.steps[:2]] == [1, 1]
    assert any("capture disabled after error: RuntimeError" in n for n in log.notes)
    # what ran after that is still read, from the PT_XLA_DEBUG output capture left behind
    assert [st.executions for st in log.steps[2:]] == [4]
    assert any("capture was disabled after an error" in n for n in log.notes)


def test_xmp_spawn_one_process(runs: dict[str, Run]) -> None:
    run = runs["xmp-spawn"]
    log = _single(run)
    assert "rank 0 sum" in run.stdout
    assert log.process == f"{os.uname().nodename}-{log.process.rsplit('-', 1)[1]}"
    assert "rank 0 of 1" in log.notes
    assert [s.compiled for s in log.syncs if s.cause == SYNC] == [True, False, False]


def test_spawned_child_process_gets_its_own_folder(runs: dict[str, Run]) -> None:
    run = runs["mp-child"]
    assert run.returncode == 0 and run.stderr.count(STARTED) == 2, run.stderr
    parent_pid = int(re.search(r"parent (\d+)", run.stdout).group(1))
    child_pid = int(re.search(r"child (\d+)", run.stdout).group(1))
    folders = sorted(p.name for p in run.out.iterdir())
    assert sorted(int(f.rsplit("-", 1)[1]) for f in folders) == sorted([parent_pid, child_pid])
    (log,) = run.logs()  # the parent ran no graph: left out
    assert log.process.endswith(f"-{child_pid}") and len(log.steps) == 3
    flags = re.search(r"flags (.*)", run.stdout).group(1)
    assert flags.count("--xla_dump_to=") == 1 and f"-{child_pid}/hlo" in flags
    (graph,) = log.graphs.values()
    assert Path(graph.module).parent == Path(log.source) / fmt.HLO_DIR


def test_torch_xla_compile_and_parallel_loader_are_steps(runs: dict[str, Run]) -> None:
    log = _single(runs["compile-loader"])
    causes = [s.cause for s in log.syncs]
    assert causes[:3] == ["torch_xla.compile"] * 3
    assert all("parallel loader" in c for c in causes[3:]) and len(causes) >= 6
    assert [s.compiled for s in log.syncs[:3]] == [True, False, False]
    assert all(st.executions == 1 for st in log.steps)  # the empty clear-pending markers are no steps


def test_ops_run_on_the_cpu_are_recorded_and_explain_the_compile_count(runs: dict[str, Run]) -> None:
    """An aten fallback (nearest upsampling's backward) cuts the step: torch_xla compiles the graph
    that feeds the op from C++, which PT_XLA_DEBUG reports with its computation hash alone. The
    capture records it as a graph of the step, so its compiles are torch_xla's count; the note
    names the op."""
    run = runs["cpu-fallback"]
    log = _single(run)
    assert run.torch_xla_compiles == len({s.graph_hash for s in log.syncs if s.compiled})
    (note,) = [n for n in log.notes if n.startswith("aten ops ran on the CPU")]
    assert "upsample_nearest2d_backward (3 time(s) from step 0)" in note
    report = build_report(log)
    assert any("ran on the CPU" in n for n in report.notes)
    assert not any("CompileTime" in w for w in report.warnings)  # the counts agree now


def test_python_api_before_and_after_torch_xla(runs: dict[str, Run]) -> None:
    early = _single(runs["api-early"])
    assert len(early.steps) == 3 and [s.compiled for s in early.syncs] == [True, False, False]
    assert early.graphs[early.syncs[0].graph_hash].module
    late = _single(runs["api-late"])
    assert len(late.steps) == 3 and not late.syncs
    assert any("no HLO kept" in n for n in late.notes) and any("not identified" in n for n in late.notes)


def test_disk_use_grows_with_graphs_not_steps(runs: dict[str, Run]) -> None:
    small, large = _single(runs["stable-10"]), _single(runs["stable-1000"])
    assert len(small.steps) == 10 and len(large.steps) == 1000
    assert len(small.graphs) == len(large.graphs) == 1

    def size(log: RunLog, sub: str) -> int:
        return sum(p.stat().st_size for p in (Path(log.source) / sub).rglob("*") if p.is_file())

    assert size(large, fmt.HLO_DIR) == size(small, fmt.HLO_DIR)
    assert size(large, fmt.TENSORS_DIR) == size(small, fmt.TENSORS_DIR)
    per_step = (size(large, fmt.JOURNAL) - size(small, fmt.JOURNAL)) / 990
    assert per_step < 100, per_step


def test_size_cap_and_source_lines_off(runs: dict[str, Run]) -> None:
    log = _single(runs["max-mb-0"])
    assert len(log.steps) == 3 and not any(g.module or g.tensors for g in log.graphs.values())
    assert any("XLAGRAPH_MAX_MB=0 reached" in n for n in log.notes)
    assert all("XLAGRAPH_MAX_MB" in g.tensors_note for g in log.graphs.values())
    meta = (Path(log.source) / fmt.META).read_text()
    assert "XLA_IR_DEBUG" not in meta and "XLA_HLO_DEBUG" not in meta
    assert not list((Path(log.source) / fmt.HLO_DIR).iterdir())


def test_unset_capture_costs_nothing(tmp_path: Path) -> None:
    pth = [Path(p) / "xlagraph-capture.pth" for p in sys.path if p.endswith("site-packages")]
    assert any(p.is_file() for p in pth), "the start-up hook is not installed: pip install -e ."
    probe = "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'xlagraph')))"
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", probe],
        env=clean_env(),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    imported = [
        line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")
    ]
    assert out.stdout.strip() == "[]" and imported
    assert not [m for m in imported if m.split(".")[0] in ("torch", "xlagraph", "torch_xla")]
    # set, but the program never imports torch_xla: no torch import, no folder
    env = clean_env(XLAGRAPH_CAPTURE=str(tmp_path / "cap"))
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert "torch" not in out.stdout and not (tmp_path / "cap").exists() and out.stderr == ""


def test_second_run_with_the_same_host_and_pid_gets_its_own_folder(tmp_path: Path) -> None:
    # A container restarted in place starts its training with the pid of the last one. exec keeps
    # the pid: this process leaves a folder for its own host and pid, then becomes a captured run.
    out = tmp_path / "cap"
    earlier = (
        "import os, socket, sys, pathlib\n"
        "d = pathlib.Path(sys.argv[1]) / f'{socket.gethostname()}-{os.getpid()}'\n"
        "d.mkdir(parents=True)\n"
        '(d / \'journal.jsonl\').write_text(\'{"k":"note","v":"the earlier run"}\\n\')\n'
        "env = dict(os.environ, XLAGRAPH_CAPTURE=sys.argv[1])\n"
        "os.execve(sys.executable, [sys.executable, sys.argv[2], '2'], env)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", earlier, str(out), str(SCRIPTS / "stable_loop.py")],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    folders = sorted(p.name for p in out.iterdir())
    assert len(folders) == 2 and folders[1] == f"{folders[0]}.2", folders
    assert (out / folders[0] / fmt.JOURNAL).read_text() == '{"k":"note","v":"the earlier run"}\n'
    meta = json.loads((out / folders[1] / fmt.META).read_text())
    assert f"{meta['host']}-{meta['pid']}" == folders[0] and meta["clean_exit"]


def test_source_lines_mode_is_planned() -> None:
    from xlagraph.capture._env import plan_env

    assert plan_env({}, "/cap/h-1").source_lines_mode == "auto"
    assert plan_env({"XLAGRAPH_SOURCE_LINES": "auto"}, "/cap/h-1").source_lines_mode == "auto"
    assert plan_env({"XLAGRAPH_SOURCE_LINES": "always"}, "/cap/h-1").source_lines_mode == "always"
    assert plan_env({"XLAGRAPH_SOURCE_LINES": "1"}, "/cap/h-1").source_lines_mode == "always"
    assert plan_env({"XLAGRAPH_SOURCE_LINES": "0"}, "/cap/h-1").source_lines_mode == "off"
    # the user set XLA_HLO_DEBUG (it implies torch_xla's IR debug): capture never switches it off
    assert plan_env({"XLA_HLO_DEBUG": "1"}, "/cap/h-1").source_lines_mode == "always"
    from xlagraph.capture._recorder import STEADY_MARKERS, Settings

    assert Settings.from_env({"XLAGRAPH_STEADY_STEPS": "3"}).steady_markers == 3
    assert Settings.from_env({"XLAGRAPH_STEADY_STEPS": "x"}).steady_markers == STEADY_MARKERS == 8
    assert Settings.from_env({"XLAGRAPH_STEADY_STEPS": "0"}).steady_markers == 1


# Clipping every 12 steps: its graph first compiles at step 11, once the run is steady (source
# lines off), and runs again at step 23.
CLIP_EVERY_K = """\
import torch, torch.nn as nn, torch_xla
device = torch_xla.device()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for step in range(30):
    x = torch.randn(4, 8).to(device)
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    if step % 12 == 11:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # CLIP
    opt.step()
    torch_xla.sync()
    print(step, torch_xla._XLAC._get_ir_debug())
"""


def test_source_lines_off_when_steady_and_a_late_graph_gets_them_from_its_rerun(tmp_path: Path) -> None:
    from xlagraph.report import build_report

    script = tmp_path / "clip.py"
    script.write_text(CLIP_EVERY_K)
    out, always = tmp_path / "cap", tmp_path / "always"

    def run(folder: Path, mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script)],
            env=clean_env(XLAGRAPH_CAPTURE=str(folder), XLAGRAPH_SOURCE_LINES=mode),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            cwd=tmp_path,
        )

    with ThreadPoolExecutor(max_workers=2) as pool:
        proc, reference = pool.map(run, (out, always), ("auto", "always"))  # auto: the default
    assert proc.returncode == reference.returncode == 0, proc.stderr[-3000:] + reference.stderr[-3000:]
    ir_debug = [line.split()[1] == "True" for line in proc.stdout.splitlines()]
    # printed after each step: what the next step is traced with. Steps 0 and 1 compile (momentum
    # buffers at 1); 8 steps later the run is steady: off, so step 11's new graph has no lines.
    # On from then until that graph runs again (step 23), off right after.
    assert ir_debug == [True] * 9 + [False] * 2 + [True] * 12 + [False] * 7
    (folder,) = out.iterdir()
    records = [json.loads(line) for line in (folder / fmt.JOURNAL).read_text().splitlines()]
    graphs: dict[int, dict] = {}
    for r in records:
        if r["k"] == "graph":
            graphs.setdefault(r["id"], {}).update(r)
    (late,) = [g for g in graphs.values() if g["step"] == 11]
    assert late["lines_off"] and late["lines_step"] == 23 and late["lines_count"] > 0
    assert late["lines_module"] == f"{fmt.LINES_DIR}/{late['hash']}.txt"
    assert not list((folder / fmt.LINES_DIR).glob(f"*{fmt.LOWERED_SUFFIX}"))  # merged, then deleted
    (log,) = read_capture(out)
    assert log.graphs[late["hash"]].module.endswith(late["lines_module"] + ".xz")  # compressed at exit
    assert any("its lines come from its run at step 23" in n for n in log.notes)
    # every line merged in is the one the run with lines always on dumped (the lowering numbers
    # instructions alike); all but called computations' get one
    merged = _lines_by_instruction(folder / late["lines_module"])
    reference_log = read_capture(always)[0]
    truth = _lines_by_instruction(Path(reference_log.graphs[late["hash"]].module))  # the same graph hash
    got = {k: v for k, v in merged.items() if v}
    assert got and all(truth[k] == v for k, v in got.items())
    assert len(got) >= 0.8 * sum(1 for v in truth.values() if v)
    # the clipping line is cited, as with source lines always on
    clip = next(i for i, line in enumerate(CLIP_EVERY_K.splitlines(), 1) if "# CLIP" in line)
    (recompile,) = [r for r in build_report(log).recompiles if r.step == 11]
    assert f"clip.py:{clip}" in {line.rsplit("/", 1)[-1] for line in recompile.lines}
    (expected,) = [r for r in build_report(reference_log).recompiles if r.step == 11]
    assert recompile.lines == expected.lines and recompile.kinds == expected.kinds


def _lines_by_instruction(path: Path) -> dict[str, str]:
    """instruction name -> `file:line` of its metadata ("" without one), for every instruction."""
    out = {}
    for line in read_bytes(compressed_twin(str(path))).decode().splitlines():
        m = re.match(r"^\s*(?:ROOT\s+)?%?([^\s=]+)\s*=\s", line)
        if m:
            src = re.search(r'source_file="([^"]*)" source_line=(\d+)', line)
            out[m.group(1)] = f"{src.group(1)}:{src.group(2)}" if src else ""
    return out


def test_unsupported_torch_xla_version_turns_capture_off(tmp_path: Path) -> None:
    fake = tmp_path / "old" / "torch_xla"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("__version__ = '2.4.0'\n_XLAC = None\n")
    probe = "import os, torch_xla; print(os.environ.get('PT_XLA_DEBUG_LEVEL'), torch_xla._XLAC)"
    env = clean_env(XLAGRAPH_CAPTURE=str(tmp_path / "cap"), PYTHONPATH=str(fake.parent))
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "None None"
    assert (
        out.stderr.strip() == "xlagraph capture: torch_xla 2.4.0 is not supported (2.5 – 2.9): capture is off"
    )


def test_xlagraph_run(runs: dict[str, Run], tmp_path: Path) -> None:
    run = runs["cli-run"]
    log = _single(run)
    assert len(log.steps) == 3 and "done 3" in run.stdout
    assert f"xlagraph: captured 1 process, 3 steps, 1 compiles of 1 graphs in {run.out}" in run.stderr
    assert f"xlagraph report {run.out}" in run.stderr
    again = subprocess.run(
        [sys.executable, *CLI_RUN, str(run.out), "--", sys.executable, "-c", "pass"],
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    assert again.returncode == 2 and "--overwrite" in again.stderr
    code = subprocess.run(
        [sys.executable, *CLI_RUN, str(tmp_path / "none"), "--", sys.executable, "-c", "raise SystemExit(3)"],
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    assert code.returncode == 3 and "nothing captured" in code.stderr


# --- every cause, end to end: unmodified script under capture, then the report ----------------

MANIFEST = {
    s["name"]: s for s in json.loads((FIXTURES / "torch_xla" / "MANIFEST.json").read_text())["scenarios"]
}
CAUSE_SCENARIOS = sorted(n for n, s in MANIFEST.items() if s["expected_causes"] and n != "fsdp_bucket")


@pytest.mark.parametrize("name", CAUSE_SCENARIOS)
def test_report_of_each_scenario_capture_names_its_cause(runs: dict[str, Run], name: str) -> None:
    from xlagraph.report import build_report

    run = runs[f"scenario-{name}"]
    report = build_report(_single(run))
    assert report.compiles == run.torch_xla_compiles == report.compiles_reported
    kinds = {k for r in report.recompiles for k in r.kinds}
    assert set(MANIFEST[name]["expected_causes"]) <= kinds, kinds
    script = (SCENARIOS / f"{name}.py").name
    cited = {line.rsplit("/", 1)[-1] for r in report.recompiles for line in r.lines}
    assert any(c.startswith(f"{script}:") for c in cited), cited


def test_fsdp_bucketing_between_two_captured_runs_is_one_collective_cause(runs: dict[str, Run]) -> None:
    from xlagraph.diff import diff_files

    graphs = []
    for bucket in ("fsdp_bucket0", "fsdp_bucket20"):
        log = _single(runs[f"scenario-{bucket}"])
        steady = [s for s in log.syncs if s.compiled][-1]  # the last compile is the steady training step
        graphs.append(log.graphs[steady.graph_hash].module)
    result = diff_files(*graphs)
    assert [c.kind.value for c in result.differences] == ["collective"]


def test_a_compile_without_an_analysis_block_is_a_graph_of_its_own(tmp_path: Path) -> None:
    # EmbeddingBag falls back to the CPU: torch_xla compiles and runs the graph of its inputs from
    # C++, and PT_XLA_DEBUG prints only its `Computation hash` (no Compilation or Execution
    # Analysis). That compile is a graph of the step: recorded with its own module (in order, so
    # no other graph is paired with its dump), and the capture counts what torch_xla counts.
    # Each module's parameter count is the graph's inputs; the report explains the 0 -> 1 change.
    loop = (
        "import torch, torch.nn as nn, torch_xla\n"
        "torch.manual_seed(0)\n"
        "dev = torch_xla.device()\n"
        "emb = nn.EmbeddingBag(20, 8, mode='mean').to(dev)\n"
        "head = nn.Linear(8, 2).to(dev)\n"
        "opt = torch.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.1)\n"
        "for step in range(5):\n"
        "    ids = torch.randint(0, 20, (4, 3)).to(dev)\n"
        "    loss = head(emb(ids)).pow(2).mean()\n"
        "    loss.backward()\n"
        "    emb.weight.grad.mul_(0.0 if step < 2 else 1.0)\n"
        "    opt.step()\n"
        "    opt.zero_grad()\n"
        "    torch_xla.sync()\n"
    )
    out = tmp_path / "cap"
    proc = subprocess.run(
        [sys.executable, "-c", loop],
        env=clean_env(XLAGRAPH_CAPTURE=str(out)),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    from xlagraph.parse.sources import load_module
    from xlagraph.report import build_report

    (folder,) = out.iterdir()
    records = [json.loads(line) for line in (folder / fmt.JOURNAL).read_text().splitlines()]
    graphs = [r for r in records if r["k"] == "graph" and r.get("module")]
    assert len(graphs) == 4, graphs
    for g in graphs:
        assert len(load_module(str(folder / g["module"])).entry.parameters) == g["in"], g
    (end,) = [r for r in records if r["k"] == "end"]
    compiled = sum(entry[1] for r in records if r["k"] == "step" for entry in r["e"])
    assert compiled == end["compiles"] == 4, (compiled, end)
    (log,) = read_capture(out)
    assert not any("matched no graph execution" in n for n in log.notes), log.notes
    unreported = [s for s in log.syncs if s.cause == UNREPORTED_CAUSE]
    assert [(s.step, s.compiled) for s in unreported] == [(0, True)], log.syncs
    assert log.graphs[unreported[0].graph_hash].module
    report = build_report(log)
    assert any("constant_value" in r.kinds for r in report.recompiles), [r.kinds for r in report.recompiles]


# --- compressed at exit: every reader reads the .xz ----------------------------------------------------


def test_compressed_capture_reads_as_the_plain_one(tmp_path: Path) -> None:
    """A capture folder after `_compress.compress_dumps` (what a clean exit does): the report, the
    graph listing of its hlo/ folder, `load` and `diff` on a dump named as the journal names it
    (`.txt`, now only `.txt.xz` on disk) all read what the plain folder gives."""
    import shutil

    import xlagraph
    from xlagraph.capture._compress import compress_dumps

    plain = FIXTURES / "torch_xla" / "two_runs" / "capture"
    packed = tmp_path / "capture"
    shutil.copytree(plain, packed)
    before = after = 0
    for proc in packed.iterdir():
        b, a = compress_dumps(str(proc))
        before, after = before + b, after + a
    assert after * 4 < before, (before, after)  # small dumps; large HLO compresses 10-20x
    texts = {p.relative_to(packed) for p in packed.rglob("*") if p.is_file() and p.suffix == ".txt"}
    assert texts == set()  # every dump is .xz now, nothing else changed
    assert {p.name for p in (packed / "vm-3382").iterdir()} == {p.name for p in (plain / "vm-3382").iterdir()}

    def report(src: Path) -> str:  # JSON, with the folder and the file names as the plain one's
        text = xlagraph.report(str(src), run="all").to_json()
        return text.replace(str(src), "DIR").replace(".txt.xz", ".txt")

    assert report(packed) == report(plain)
    logs = read_capture(str(packed))
    assert [g.module.endswith(".txt.xz") for log in logs for g in log.graphs.values()] == [True] * 3
    assert not [n for log in logs for n in log.notes if "missing" in n or "not kept" in n]

    listing = xlagraph.graphs(str(packed / "vm-3382" / "hlo"))
    assert [r.fingerprint for r in listing.rows] == [
        r.fingerprint for r in xlagraph.graphs(str(plain / "vm-3382" / "hlo")).rows
    ]
    names = sorted(p.name for p in (plain / "vm-3382" / "hlo").iterdir())
    a, b = (str(packed / "vm-3382" / "hlo" / n) for n in names)  # as the journal names them
    pa, pb = (str(plain / "vm-3382" / "hlo" / n) for n in names)
    assert not os.path.exists(a) and os.path.exists(a + ".xz")
    assert xlagraph.load(a).fingerprint == xlagraph.load(pa).fingerprint
    assert xlagraph.load(a + ".xz").instruction_count == xlagraph.load(pa).instruction_count
    d, reference = xlagraph.diff(a, b), xlagraph.diff(pa, pb)
    # the same answer; each side is labelled by the file read
    assert d.to_text() == reference.to_text().replace(pa, a + ".xz").replace(pb, b + ".xz")


def test_compression_is_a_setting() -> None:
    from xlagraph.capture._settings import Settings

    assert Settings.from_env({}).compress
    assert not Settings.from_env({"XLAGRAPH_COMPRESS": "0"}).compress
    assert not Settings.from_env({"XLAGRAPH_COMPRESS": " off "}).compress
