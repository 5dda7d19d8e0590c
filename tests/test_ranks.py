"""The rank view of multi-process runs: real torchrun captures and per-rank dumps (fixtures/torch_xla/
ranks/, 4 ranks), and two live torchrun runs of the same rank-dependent scripts.

torch_xla 2.9 on CPU gives each torchrun process a world of one: the scripts read RANK and
WORLD_SIZE as user code does (shard data, log on rank 0, a short last batch), and
XLA_ALWAYS_ALLREDUCE=1 keeps `xm.all_reduce` in their graphs. No collective crosses processes
here; the view compares the graphs each rank compiled and ran.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import xlagraph
from tests.conftest import FIXTURES
from tests.test_capture import clean_env
from xlagraph.capture import read_capture
from xlagraph.render.ranks_text import render_ranks_text, strip_columns
from xlagraph.report.ranks import collectives_of, describe_ranks, rank_dir_runs, rank_of, rank_view

RANKS = FIXTURES / "torch_xla" / "ranks"
TIMEOUT = 300


def _view(name: str, part: str = "capture"):
    path = RANKS / name / part
    if not path.exists():
        pytest.fail(f"missing {path}: run fixtures/torch_xla/ranks/generate.py")
    logs = read_capture(path) if part == "capture" else rank_dir_runs(str(path))
    assert logs is not None
    view = rank_view(logs)
    assert view is not None
    return view


def test_logging_collective_on_rank_0_is_where_the_job_would_hang() -> None:
    view = _view("log_rank0")
    assert view.ranks == (0, 1, 2, 3) and view.world == 4
    d = view.divergence
    assert d is not None and d.step == 1
    assert [g.ranks for g in d.groups] == [(1, 2, 3), (0,)]
    assert len(d.groups[1].variants) == 2  # the .item() splits rank 0's step in two graphs
    m = view.collectives
    assert m is not None and (m.step, m.position, m.lined_up) == (1, 1, 0)
    base, odd = m.groups
    assert base.ranks == (1, 2, 3) and odd.ranks == (0,)
    assert odd.collective.kind == base.collective.kind == "all-reduce"
    assert odd.collective.operands == ("f32[]", "f32[]")  # the logged loss and its scale
    assert base.collective.operands == ("f32[16,8]", "f32[4,16]", "f32[]")  # the gradients
    assert "rank 0 runs all-reduce #1 (f32[], f32[])" in m.text
    assert "ranks 1-3 run all-reduce #1 (f32[16,8], f32[4,16], f32[])" in m.text
    assert not view.agree


def test_a_ranks_cut_step_is_a_graph_break_at_its_line_with_the_cut_collectives_in_it() -> None:
    """A rank's `.item()` cuts its step (the blind ranks round's nan_guard, rank 0 before backward;
    log_rank0's logged loss): the divergent graph is diffed with what each rank's capture knows of
    its sync, so the break is said at the user's line; the all-reduce the cut graph ends before is
    the rest of the step, not a collective of its own; no constant is paired across the cut."""
    view = _view("heldout/nan_guard")
    (diff,) = view.divergence.diffs
    assert [str(c.kind) for c in diff.causes] == ["graph_break"]
    assert "nan_guard.py:52" in diff.causes[0].summary
    (diff,) = _view("log_rank0").divergence.diffs
    assert "graph_break" in [str(c.kind) for c in diff.causes]
    assert "constant_value" not in [str(c.kind) for c in diff.causes]


def test_short_batch_on_the_last_ranks_is_a_parameter_shape_and_collectives_line_up() -> None:
    view = _view("short_batch")
    d = view.divergence
    assert d is not None and d.step == 3
    assert [g.ranks for g in d.groups] == [(0, 1), (2, 3)]
    ((group, _, _, causes, note),) = d.diffs
    assert (group, note) == (1, "")
    assert [str(c.kind) for c in causes] == ["parameter_shape"]
    assert view.collectives is None and view.collectives_compared >= 1
    text = render_ranks_text(view)
    assert "ranks diverge at step 3: ranks 2-3 run B, where ranks 0-1 run A" in text
    assert "collectives line up" in text


def test_ranks_that_agree() -> None:
    view = _view("even")
    assert view.agree and view.collectives is None
    assert all(row == view.strip[0] for row in view.strip)
    assert "every rank ran the same graphs at every step" in render_ranks_text(view)


def test_per_rank_save_files_give_the_same_view() -> None:
    view = _view("log_rank0", "save")
    assert view.ranks == (0, 1, 2, 3) and view.unit == "step"
    assert view.collectives is not None
    odd = next(g for g in view.collectives.groups if g.ranks == (0,))
    assert odd.collective.operands == ("f32[]", "f32[]")
    short = _view("short_batch", "save")
    assert short.divergence is not None
    assert [g.ranks for g in short.divergence.groups] == [(0, 1), (2, 3)]
    assert [str(c.kind) for c in short.divergence.diffs[0][3]] == ["parameter_shape"]


def test_per_rank_dump_folders_compare_compiles() -> None:
    view = _view("log_rank0", "dump")
    assert view.unit == "compile" and view.ranks == (0, 1, 2, 3)
    assert view.divergence is not None and view.divergence.step == 1
    assert view.collectives is None  # a compile-only view cannot say which graphs ran
    text = render_ranks_text(view)
    assert "first divergent compile" in text and "compiles only" in text


def test_rank_of_and_folder_detection(tmp_path: Path) -> None:
    logs = read_capture(RANKS / "even" / "capture")
    assert sorted(rank_of(log) for log in logs) == [0, 1, 2, 3]
    (tmp_path / "notes.txt").write_text("x")
    assert rank_dir_runs(str(tmp_path)) is None  # nothing per-rank here
    assert rank_view(logs[:1]) is None  # one process: no rank view
    assert describe_ranks([3]) == "rank 3"
    assert describe_ranks([0, 1, 2, 5, 7, 8]) == "ranks 0-2, 5, 7-8"


def test_strip_folds_quiet_steps() -> None:
    view = _view("short_batch")
    long = type(view)(**{**view.__dict__, "strip": tuple(row * 30 for row in view.strip)})
    cols = strip_columns(long, limit=12)
    assert len(cols) <= 12 and cols[0] == 0 and None in cols


def test_collectives_of_descends_into_called_computations() -> None:
    # Hand-written HLO (a parser edge case, not torch_xla output): a collective inside a while body
    # is issued where the while stands, between the entry's own collectives.
    from xlagraph.parse.hlo import parse_hlo

    text = """HloModule m
add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b) }
body { p = f32[4] parameter(0)
  ROOT g = f32[4] all-reduce(p), replica_groups={}, to_apply=add }
cond { p = f32[4] parameter(0)
  ROOT t = pred[] constant(true) }
ENTRY e { x = f32[4] parameter(0)
  r0 = f32[4] all-gather(x), dimensions={0}, replica_groups={}
  w = f32[4] while(r0), condition=cond, body=body
  ROOT r1 = f32[4] reduce-scatter(w), dimensions={0}, replica_groups={}, to_apply=add }
"""
    ops = collectives_of(parse_hlo(text), "A")
    assert [o.kind for o in ops] == ["all-gather", "all-reduce", "reduce-scatter"]


def _cli(*args: str):
    return CliRunner().invoke(xlagraph, list(args))


def test_report_and_check_show_the_rank_view(tmp_path: Path) -> None:
    src = str(RANKS / "log_rank0" / "capture")
    text = _cli("report", src)
    assert text.exit_code == 0, text.output
    assert "ranks diverge at step 1" in text.output and "collectives do not line up" in text.output
    data = json.loads(_cli("report", src, "--json").output)
    ranks = data["ranks"]
    assert ranks["agree"] is False and ranks["divergence"]["step"] == 1
    assert ranks["collectives"]["position"] == 1 and len(ranks["strip"]) == 4
    failed = _cli("check", src, "--max-graphs", "10")
    assert failed.exit_code == 1 and "FAIL: ranks diverge" in failed.output
    assert json.loads(_cli("check", src, "--max-graphs", "10", "--json").output)["passed"] is False
    passed = _cli("check", str(RANKS / "even" / "capture"), "--max-graphs", "10")
    assert passed.exit_code == 0, passed.output
    page = tmp_path / "run.html"
    assert _cli("report", src, "--html", str(page)).exit_code == 0
    html = page.read_text()
    assert 'class="rank-strip"' in html and "ranks diverge at step 1" in html


def test_report_and_check_over_a_folder_of_per_rank_dumps() -> None:
    saves = _cli("report", str(RANKS / "short_batch" / "save"))
    assert saves.exit_code == 0, saves.output
    assert "ranks diverge at step 2: ranks 2-3 run B, where ranks 0-1 run A" in saves.output
    dumps = _cli("check", str(RANKS / "log_rank0" / "dump"), "--max-graphs", "5")
    assert dumps.exit_code == 1 and "first divergent compile" in dumps.output
    assert "recorded 1 compiles" not in dumps.output  # a compile-only view: fewer compiles is no stop


def test_graphs_and_diff_over_per_rank_dumps_give_the_rank_view() -> None:
    # `graphs` of a folder of per-rank save files; `diff` of two ranks' whole save files or dump
    # folders (no #K): the same cross-rank view as `report`, without a capture.
    listing = _cli("graphs", str(RANKS / "short_batch" / "save"))
    assert listing.exit_code == 0, listing.output
    assert "ranks diverge at step 2: ranks 2-3 run B, where ranks 0-1 run A" in listing.output
    data = json.loads(_cli("graphs", str(RANKS / "short_batch" / "save"), "--json").output)
    assert data["kind"] == "ranks" and data["ranks"]["divergence"]["step"] == 2
    save = RANKS / "log_rank0" / "save"
    differ = _cli("diff", str(save / "save.hlo.0"), str(save / "save.hlo.1"))
    assert differ.exit_code == 1, differ.output
    assert "collectives do not line up" in differ.output and "ranks 0-1" in differ.output
    same = _cli("diff", str(save / "save.hlo.1"), str(save / "save.hlo.2"))
    assert same.exit_code == 0 and "every rank ran the same graphs at every step" in same.output
    dumps = RANKS / "log_rank0" / "dump"
    assert _cli("diff", str(dumps / "rank0"), str(dumps / "rank1")).exit_code in (0, 1)
    # one graph of a save file is still a graph diff, not a rank view
    one = _cli("diff", f"{save / 'save.hlo.0'}#0", f"{save / 'save.hlo.1'}#0")
    assert "ranks:" not in one.output


# -- live: the same scripts under torchrun, 2 processes ------------------------------------------


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("torchrun")
    out = {}
    for name, argv in (("short_batch", ["short_batch.py", "15"]), ("log_rank0", ["log_rank0.py"])):
        folder = root / name
        env = clean_env(XLAGRAPH_CAPTURE=str(folder), XLA_ALWAYS_ALLREDUCE="1", PYTHONHASHSEED="0")
        env = {k: v for k, v in env.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", *argv]
        proc = subprocess.run(cmd, cwd=RANKS, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[name] = folder
    return out


def test_live_torchrun_records_each_rank(live: dict[str, Path]) -> None:
    logs = read_capture(live["short_batch"])
    assert [rank_of(log) for log in logs] == [0, 1]
    meta = json.loads((Path(logs[1].source) / "meta.json").read_text())
    info = meta["rank_info"]
    assert (info["rank"], info["world"], info["source"]) == (1, 2, "RANK")
    assert info["env"]["LOCAL_RANK"] == "1" and info["ordinal"] == 0  # a world of one to torch_xla
    assert info["host"] == meta["host"]


def test_live_torchrun_short_batch_on_the_last_rank(live: dict[str, Path]) -> None:
    # 15 rows over 2 ranks: rank 0 gets 8 (4 + 4), rank 1 gets 7 (4 + 3).
    view = rank_view(read_capture(live["short_batch"]))
    assert view is not None and view.divergence is not None and view.divergence.step == 1
    assert [g.ranks for g in view.divergence.groups] == [(0,), (1,)]
    assert "parameter_shape" in [str(c.kind) for c in view.divergence.diffs[0][3]]


def test_live_torchrun_logging_on_rank_0(live: dict[str, Path]) -> None:
    view = rank_view(read_capture(live["log_rank0"]))
    assert view is not None and view.collectives is not None
    assert view.collectives.step == 1 and "rank 0 runs all-reduce #1 (f32[], f32[])" in view.collectives.text


# -- a pod: many ranks holding the same files ---------------------------------------------------
def _pod(tmp_path: Path, ranks: int, diverging: tuple[int, ...]) -> Path:
    """`benchmarks/bench_ranks.py`'s simulation of a pod: a real corpus capture copied per rank."""
    sys.path.insert(0, str(FIXTURES.parent / "benchmarks"))
    try:
        from bench_ranks import build
    finally:
        sys.path.pop(0)
    source = FIXTURES / "torch_xla" / "corpus" / "captures" / "tu_gpt2_varlen"
    build(source, tmp_path / "pod", ranks, diverging)
    return tmp_path / "pod"


def test_a_pod_reports_each_rank_as_it_would_be_reported_alone(tmp_path: Path) -> None:
    """Graphs are read and diffed once per distinct content across ranks: every process's report
    is still the one it gets on its own, the diverging rank's included."""
    from xlagraph import api, progress

    pod = _pod(tmp_path, 3, diverging=(1,))
    said: list[str] = []
    with progress.shown(said.append):
        together = api.report(str(pod))
    assert [s for s in said if s.startswith("rank ")] == ["rank 1/3", "rank 2/3", "rank 3/3"]
    assert not any(s.startswith("recompile") for s in said)  # a pod counts ranks, not recompiles
    processes = together.to_dict()["processes"]
    for proc, data in zip(sorted(pod.iterdir()), processes, strict=True):
        assert data == api.report(str(proc)).to_dict()["processes"][0]
    view = together.ranks
    assert view is not None and view.divergence is not None
    assert [g.ranks for g in view.divergence.groups] == [(0, 2), (1,)]


def test_a_compressed_capture_keeps_its_partitioned_twin() -> None:
    """Under SPMD the collectives are read from the module after partitioning; a capture stores
    both as .xz (and the corpus keeps them so): the twin of a compressed module is found too."""
    from xlagraph.report.ranks.collectives import _partitioned_twin

    hlo = FIXTURES / "torch_xla" / "corpus" / "captures" / "hx_spmd_tp_after_warmup" / "hlo"
    before = hlo / "module_0000.SyncTensorsGraph.443.before_optimizations.txt.xz"
    assert _partitioned_twin(str(before)) == str(
        hlo / "module_0000.SyncTensorsGraph.443.cpu_after_optimizations.txt.xz"
    )
    plain = "module_0000.SyncTensorsGraph.443.before_optimizations.txt"  # as the journal names it
    assert _partitioned_twin(str(hlo / plain)).endswith("cpu_after_optimizations.txt.xz")


def test_a_host_decided_clip_on_one_rank_is_named_at_its_if_in_the_rank_view() -> None:
    """Rank 2 alone takes `if norm.item() > MAX_NORM:` at step 3 (its shard's outliers): the rank
    view's diff reads the rank's stored sources, as the rank's own report does, so the scaling is
    work under that `if` (not an option switched on), and the all-reduce after it lines up."""
    view = _view("clip_branch")
    d = view.divergence
    assert d is not None and d.step == 3
    assert [g.ranks for g in d.groups] == [(0, 1, 3), (2,)]
    ((_, _, _, causes, _),) = d.diffs
    assert [c.fix_id for c in causes] == ["conditional_work.host_branch"], causes
    assert causes[0].sources[0].endswith("clip_branch.py:25"), causes[0].sources
    assert view.collectives is None
