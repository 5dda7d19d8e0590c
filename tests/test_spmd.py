"""SPMD under capture: real torch_xla 2.9 runs on 4 virtual CPU devices (`xr.use_spmd()`,
PJRT_DEVICE=CPU CPU_NUM_DEVICES=4), stored in fixtures/torch_xla/spmd/ and one run live.

What only a capture knows is checked here: the module after SPMD partitioning kept beside the
one before it, and the `mark_sharding` calls (tensor, mesh axes, partition spec, line) that put
`{devices=[4,1]0,1,2,3}` back in the user's terms.
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
from xlagraph.capture.shardings import (
    in_user_terms,
    normalize_sharding,
    read_mark_shardings,
    recompile_shardings,
)
from xlagraph.report import build_report

SPMD = FIXTURES / "torch_xla" / "spmd"
NAMES = ("sharding_changes", "sharded_some_steps", "fsdpv2", "ragged_batch")
TIMEOUT = 300


def _line(script: str, text: str) -> str:
    """`<script>:<n>`: the stored captures name the scripts by their portable path, relative to
    the working directory they ran in (this folder)."""
    path = SPMD / script
    n = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)
    return f"{script}:{n}"


def _capture(name: str) -> Path:
    path = SPMD / name / "capture"
    if not path.exists():
        pytest.fail(f"missing {path}: run fixtures/torch_xla/spmd/generate.py")
    return path


def _report(name: str):
    (log,) = read_capture(_capture(name))
    report = build_report(log)
    return report, recompile_shardings(report, read_mark_shardings(log.source))


@pytest.mark.parametrize("name", NAMES)
def test_capture_keeps_the_module_before_and_after_partitioning(name: str) -> None:
    (folder,) = [p for p in _capture(name).iterdir() if p.is_dir()]
    graphs = [
        json.loads(line)
        for line in (folder / "journal.jsonl").read_text().splitlines()
        if '"k":"graph"' in line and '"module"' in line
    ]
    assert graphs
    for g in graphs:
        before, after = (folder / g["module"]).read_text(), (folder / g["partitioned"]).read_text()
        assert "num_partitions=4" in before.splitlines()[0]
        assert "_spmd" in after and "sharding={" in after  # the partitioned entry, per-device shapes
    expected = json.loads((SPMD / "EXPECTED.json").read_text())[name]
    (log,) = read_capture(_capture(name))
    assert log.compiles_reported == expected["compiles"]


def test_sharding_that_changes_on_some_steps_is_named_in_user_terms() -> None:
    report, marked = _report("sharding_changes")
    last = report.recompiles[-1]
    assert last.step == 2 and last.kinds == ("sharding",)
    ((sync, text),) = marked
    assert sync == last.sync
    assert "f32[8,16]: ('data', None) -> (None, 'data') over mesh (data=4, model=1)" in text
    assert _line("sharding_changes.py", "# CAUSE") in text


def test_tensor_sharded_only_on_some_steps() -> None:
    report, marked = _report("sharded_some_steps")
    assert [r.kinds[0] for r in report.recompiles] == ["sharding", "sharding"]
    labels = _line("sharded_some_steps.py", "# CAUSE")
    on = marked[0][1]
    assert "f32[8,4]: replicated (not marked) -> ('data', None) over mesh (data=4)" in on and labels in on
    # step 2 is explained against the baseline the engine picks (step 0 or 1): where it names the
    # labels again, they went back to replicated
    assert all(text.endswith("-> replicated (not marked)") for _, text in marked[1:])
    # the batch, sharded the same way at another line, is told apart by its shape
    assert _line("sharded_some_steps.py", 'xs.mark_sharding(x, m, ("data", None))') not in on


def test_fsdpv2_recompile_names_the_marked_input() -> None:
    report, marked = _report("fsdpv2")
    (rc,) = report.recompiles
    assert rc.step == 2 and rc.kinds == ("parameter_shape",)
    ((_, text),) = marked
    assert "f32[4,16] -> f32[2,16] is the tensor sharded ('fsdp', None) over mesh (fsdp=4, model=1)" in text
    assert _line("fsdpv2.py", 'xs.mark_sharding(x, m, ("fsdp", None))') in text
    marks = read_mark_shardings(read_capture(_capture("fsdpv2"))[0].source)
    wrapped = [m for m in marks if m.shape == "f32[32,16]"]  # FSDPv2 shards each parameter itself
    assert wrapped and wrapped[0].line.endswith(_line("fsdpv2.py", "model = FSDPv2("))


def test_ragged_batch_on_a_sharded_input_is_still_a_ragged_batch() -> None:
    report, marked = _report("ragged_batch")
    last = report.recompiles[-1]
    assert last.step == 2 and last.kinds == ("parameter_shape",)
    assert "sharding" not in last.kinds
    ((_, text),) = marked
    assert "f32[8,16] -> f32[4,16] is the tensor sharded ('data', None) over mesh (data=4)" in text


def test_user_terms_helpers() -> None:
    marks = read_mark_shardings(read_capture(_capture("sharding_changes"))[0].source)
    assert normalize_sharding("sharding={devices=[4,1] 0,1,2,3}") == "devices=[4,1]0,1,2,3"
    assert in_user_terms(marks, "{devices=[1,4]0,1,2,3}", "f32[8,16]").startswith("(None, 'data') over")
    assert in_user_terms(marks, "{devices=[2,2]0,1,2,3}") == ""  # no recorded call made it
    assert in_user_terms(marks, "{replicated}") == "replicated (not marked)"


def test_report_json_and_text_carry_the_mark_sharding_view() -> None:
    src = str(_capture("sharding_changes"))
    text = CliRunner().invoke(xlagraph, ["report", src])
    assert text.exit_code == 0, text.output
    assert "sharding, in your terms" in text.output and "('data', None) -> (None, 'data')" in text.output
    data = json.loads(CliRunner().invoke(xlagraph, ["report", src, "--json"]).output)
    ((entry,),) = [d["recompiles"] for d in data["mark_sharding"]]
    assert entry["sync"] == 2 and "(None, 'data')" in entry["text"]


def test_live_spmd_capture(tmp_path: Path) -> None:
    out = tmp_path / "cap"
    env = clean_env(XLAGRAPH_CAPTURE=str(out), CPU_NUM_DEVICES="4", PYTHONHASHSEED="0")
    proc = subprocess.run(
        [sys.executable, "sharding_changes.py"],
        cwd=SPMD,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (log,) = read_capture(out)
    assert log.compiles_reported == 3 and "rank 0 of 1" in log.notes
    marks = read_mark_shardings(log.source)
    assert [(m.step, m.spec) for m in marks] == [(0, ("data", None)), (2, (None, "data"))]
    assert marks[0].axes == ("data", "model") and marks[0].mesh == (4, 1) and marks[0].shape == "f32[8,16]"
    assert marks[0].sharding == "{devices=[4,1]0,1,2,3}"
    assert all(g.module for g in log.graphs.values())
    # A clean exit stores the dumps compressed (XLAGRAPH_COMPRESS, on by default).
    assert len(list((Path(log.source) / "hlo").glob("*after_optimizations.txt.xz"))) == 3


def test_collectives_of_an_spmd_graph_come_from_the_partitioned_module() -> None:
    # A multi-host SPMD run's rank view compares the collectives the partitioner added: they are
    # only in the module after partitioning, which the capture keeps beside the one before it.
    from xlagraph.parse.sources import load_module
    from xlagraph.report.ranks import collectives_of
    from xlagraph.report.ranks.collectives import _partitioned_twin

    (folder,) = [p for p in _capture("fsdpv2").iterdir() if p.is_dir()]
    before = sorted((folder / "hlo").glob("*before_optimizations.txt"))[0]
    assert collectives_of(load_module(str(before)), "A") == ()
    twin = _partitioned_twin(str(before))
    assert twin.endswith("after_optimizations.txt")
    kinds = {op.kind for op in collectives_of(load_module(twin), "A")}
    assert {"all-gather", "all-reduce"} <= kinds  # FSDPv2 gathers the sharded parameters
