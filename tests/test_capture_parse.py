"""The pure parts of capture: PT_XLA_DEBUG and live-tensor report parsers on real torch_xla 2.9
text (tests/data/make_capture_data.py), the environment plan, and the reader on damaged folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from xlagraph.capture import files as fmt
from xlagraph.capture._env import ENV_MARK, plan_env
from xlagraph.capture._process_meta import supported
from xlagraph.capture.reader import read_capture
from xlagraph.errors import InputError
from xlagraph.ir import Frame
from xlagraph.parse.pt_xla_debug import (
    UNREPORTED_CAUSE,
    Analysis,
    ComputationHash,
    fold_executions,
    parse_pt_xla_debug,
)
from xlagraph.parse.tensors_report import parse_tensors_report

DATA = Path(__file__).parent / "data"
DEBUG_TEXT = (DATA / "pt_xla_debug.txt").read_text()
SYNC = "user torch_xla.sync"
ITEM = "most likely user code trying to access tensor value before torch_xla.sync"


def _where(frame: Frame) -> tuple[str, str, int]:
    # the fixture holds the absolute paths of the machine that made it
    return frame.function, Path(frame.file).name, frame.line


def test_pt_xla_debug_blocks_in_order() -> None:
    events, rest = parse_pt_xla_debug(DEBUG_TEXT)
    assert rest == ""
    kinds = [e.kind if isinstance(e, Analysis) else "hash" for e in events]
    assert kinds.count("compile") == 4 and kinds.count("hash") == 4 and kinds.count("execute") == 7
    first = events[0]
    assert isinstance(first, Analysis) and first.cause == SYNC and first.inputs == 2 and first.outputs == 1
    assert first.frames[0].function == "sync" and first.frames[0].file.endswith("torch_xla.py")
    assert _where(first.frames[1]) == ("debug_output", "make_capture_data.py", 55)
    assert all(len(e.graph_hash) >= 17 for e in events if isinstance(e, Analysis))
    assert any(isinstance(e, ComputationHash) for e in events)


def test_pt_xla_debug_cut_frame_list() -> None:
    events, _ = parse_pt_xla_debug(DEBUG_TEXT)
    cut = [e for e in events if isinstance(e, Analysis) and e.frames_truncated]
    assert cut and all(len(e.frames) == 8 and e.frames[0].function == "deep" for e in cut)


@pytest.mark.parametrize("step", [1, 7, 97])
def test_pt_xla_debug_incremental_reads_give_the_same_events(step: int) -> None:
    whole, _ = parse_pt_xla_debug(DEBUG_TEXT)
    cuts = range(0, len(DEBUG_TEXT), step) if step > 1 else range(0, len(DEBUG_TEXT), 211)
    for cut in cuts:
        head, rest = parse_pt_xla_debug(DEBUG_TEXT[:cut])
        tail, rest = parse_pt_xla_debug(rest + DEBUG_TEXT[cut:])
        assert head + tail == whole and rest == "", cut


def test_fold_pairs_each_compile_with_its_execution() -> None:
    events, _ = parse_pt_xla_debug(DEBUG_TEXT)
    executions, pending = fold_executions(events)
    assert pending is None
    assert [(e.cause, e.compiled) for e in executions] == [
        (SYNC, True),
        (SYNC, False),
        (ITEM, True),
        (SYNC, False),
        (ITEM, True),
        ("torch_xla.compile", True),
        ("torch_xla.compile", False),
    ]
    assert all(e.computation_hash for e in executions if e.compiled)
    assert not any(e.computation_hash for e in executions if not e.compiled)


def test_fold_across_reads_and_compiles_only() -> None:
    events, _ = parse_pt_xla_debug(DEBUG_TEXT)
    split = next(i for i, e in enumerate(events) if isinstance(e, Analysis) and e.kind == "execute")
    first, pending = fold_executions(events[:split])  # compile read, its execution not yet
    assert first == [] and pending is not None
    rest, pending = fold_executions(events[split:], pending)
    assert rest[0].compiled and pending is None
    level1 = [e for e in events if not (isinstance(e, Analysis) and e.kind == "execute")]
    only, _ = fold_executions(level1, executions_reported=False)
    assert len(only) == 4 and all(e.compiled for e in only)


# What torch_xla 2.9 printed (PT_XLA_DEBUG_LEVEL=2) for the graph it compiled and ran to feed
# `upsample_nearest2d_backward`'s CPU fallback (corpus hz_unet_timestep_lookup): a hash and the
# sizes, with no Compilation or Execution Analysis.
UNREPORTED = """
Computation hash: 711ff4e2c2dd9d349663e54cc017f45b

Post Compilation Analysis: ================================================================================
Post Compilation Analysis: Graph input size: 0.000031 GB
Post Compilation Analysis: Graph output size: 0.000061 GB
Post Compilation Analysis: Aliased Input size: 0.000000 GB
Post Compilation Analysis: Intermediate tensor size: 0.000193 GB
Post Compilation Analysis: Compiled program size: 0.000000 GB
Post Compilation Analysis: --------------------------------------------------------------------------------
Post Compilation Analysis: ================================================================================
"""


def test_a_hash_without_a_compile_is_a_compiled_graph_of_its_own() -> None:
    events, _ = parse_pt_xla_debug(UNREPORTED + DEBUG_TEXT)
    executions, pending = fold_executions(events)
    reported, _ = fold_executions(parse_pt_xla_debug(DEBUG_TEXT)[0])
    assert pending is None and executions[1:] == reported  # the reported ones keep their hashes
    first = executions[0]
    assert (first.cause, first.compiled, first.frames) == (UNREPORTED_CAUSE, True, ())
    assert first.graph_hash == first.computation_hash == "711ff4e2c2dd9d349663e54cc017f45b"
    # at level 1 no execution follows a compile, so a hash cannot be told apart: left as it was
    level1 = [e for e in events if not (isinstance(e, Analysis) and e.kind == "execute")]
    only, _ = fold_executions(level1, executions_reported=False)
    assert UNREPORTED_CAUSE not in {e.cause for e in only}


def test_tensors_report_with_frames() -> None:
    tensors = parse_tensors_report((DATA / "tensors_report.txt").read_text())
    assert len(tensors) == 15
    assert [t.id for t in tensors] == sorted(t.id for t in tensors)
    loss = tensors[1]
    assert (loss.id, loss.shape, loss.device, loss.ir_nodes) == (12, "f32[]", "CPU:0", 13)
    assert _where(loss.frames[0]) == ("tensors_report", "make_capture_data.py", 32)
    assert tensors[2].shape == "f32[8,2]{1,0}"  # commas inside the shape
    logged = tensors[-1]
    assert logged.shape == "f32[]" and logged.frames[0].line == 35  # `logged = loss.detach() * 2`
    assert all(t.frames for t in tensors)


def test_tensors_report_without_frames() -> None:
    tensors = parse_tensors_report((DATA / "tensors_report.noframes.txt").read_text())
    assert len(tensors) == 15 and not any(t.frames for t in tensors)
    assert parse_tensors_report("") == ()


def test_layout_arity_on_real_dumps() -> None:
    fixtures = Path(__file__).parent.parent / "fixtures" / "torch_xla"
    dumps = sorted(fixtures.glob("*/xla_dump/*before_optimizations*.txt"))
    assert dumps
    for path in dumps:
        line = path.read_text().split("\n", 1)[0]
        assert fmt.layout_arity(line) >= 1, path
    assert fmt.layout_arity("HloModule m, entry_computation_layout={()->f32[]}") == 0
    assert (
        fmt.layout_arity("HloModule m, entry_computation_layout={(f32[2,3]{1,0}, (s32[], f32[]))->f32[]}")
        == 2
    )
    assert fmt.dump_order("module_0012.SyncTensorsGraph.5.before_optimizations.txt") == 12


def test_plan_env_fresh() -> None:
    plan = plan_env({"XLA_FLAGS": "--xla_foo=1"}, "/cap/h-1")
    assert plan.set_vars["XLA_FLAGS"] == "--xla_foo=1 --xla_dump_to=/cap/h-1/hlo --xla_dump_hlo_as_text"
    assert plan.set_vars["PT_XLA_DEBUG_LEVEL"] == "2"
    assert plan.set_vars["PT_XLA_DEBUG_FILE"] == plan.debug_file == "/cap/h-1/pt_xla_debug.txt"
    assert plan.set_vars["XLA_IR_DEBUG"] == plan.set_vars["XLA_HLO_DEBUG"] == "1"
    assert plan.hlo_dump and plan.source_lines and plan.forward_debug is None and plan.debug_level == 2
    assert plan.restore["XLA_FLAGS"] == "--xla_foo=1" and plan.restore["PT_XLA_DEBUG_LEVEL"] is None


def test_plan_env_respects_the_user() -> None:
    env = {
        "PT_XLA_DEBUG_LEVEL": "1",
        "XLA_IR_DEBUG": "0",
        "XLA_FLAGS": "--xla_dump_to=/mine",
        "XLAGRAPH_SOURCE_LINES": "1",
    }
    plan = plan_env(env, "/cap/h-1")
    assert "PT_XLA_DEBUG_LEVEL" not in plan.set_vars and plan.debug_level == 1 and plan.forward_debug == ""
    assert "XLA_IR_DEBUG" not in plan.set_vars and plan.set_vars["XLA_HLO_DEBUG"] == "1"
    assert "XLA_FLAGS" not in plan.set_vars and not plan.hlo_dump
    assert any("--xla_dump_to=/mine" in n for n in plan.notes)
    assert any("compiles only" in n for n in plan.notes)
    off = plan_env({"XLAGRAPH_SOURCE_LINES": "0"}, "/cap/h-1")
    assert "XLA_IR_DEBUG" not in off.set_vars and "XLA_HLO_DEBUG" not in off.set_vars and not off.source_lines


def test_plan_env_child_replaces_what_the_parent_capture_set() -> None:
    parent = plan_env({"XLA_FLAGS": "--xla_foo=1"}, "/cap/h-1")
    inherited = {**parent.set_vars}
    inherited["XLA_FLAGS"] += " --xla_cpu_enable_fast_math=false"  # torch_xla's import adds flags
    child = plan_env(inherited, "/cap/h-2")
    assert child.set_vars["XLA_FLAGS"] == (
        "--xla_foo=1 --xla_cpu_enable_fast_math=false --xla_dump_to=/cap/h-2/hlo --xla_dump_hlo_as_text"
    )
    assert child.set_vars["PT_XLA_DEBUG_FILE"] == "/cap/h-2/pt_xla_debug.txt"
    assert child.debug_level == 2 and child.forward_debug is None and child.hlo_dump
    assert json.loads(child.set_vars[ENV_MARK])["PT_XLA_DEBUG_FILE"] == "/cap/h-2/pt_xla_debug.txt"


def test_supported_versions() -> None:
    assert supported("2.9.0") and supported("2.5.1+git123") and supported("2.7.0rc1".replace("rc1", ""))
    assert not supported("2.4.0") and not supported("2.10.0") and not supported("nightly")


def _journal(tmp: Path, lines: list[str]) -> Path:
    proc = tmp / "cap" / "host-1"
    proc.mkdir(parents=True)
    (proc / fmt.META).write_text(json.dumps({"debug_level": 2, "rank": 0, "world_size": 1, "notes": []}))
    (proc / fmt.JOURNAL).write_text("".join(lines))
    return proc


STEP_LINES = [
    '{"k":"start","t":1.0,"pid":1,"compiles":0,"executions":0}\n',
    '{"k":"cause","id":0,"v":"user torch_xla.sync"}\n',
    '{"k":"frames","id":0,"v":[["<module>","train.py",9]]}\n',
    '{"k":"graph","id":0,"hash":"abc123abc123abc123","in":1,"out":1,"step":0,"compiled":true}\n',
    '{"k":"step","i":0,"t0":0.0,"t1":0.5,"c":1,"x":1,"e":[[0,1,0,0]],"cs":[0.25]}\n',
    '{"k":"step","i":1,"t0":0.5,"t1":0.6,"c":0,"x":1,"e":[[0,0,0,0]]}\n',
]


def test_reader_ignores_a_partial_last_record(tmp_path: Path) -> None:
    _journal(tmp_path, [*STEP_LINES, '{"k":"step","i":2,"t0":0.6,"t1'])
    (run,) = read_capture(tmp_path / "cap")
    assert [s.index for s in run.steps] == [0, 1] and len(run.syncs) == 2
    assert run.syncs[0].compiled and run.syncs[0].compile_seconds == 0.25
    assert run.syncs[1].frames == (Frame("<module>", "train.py", 9),)
    assert any("last record is incomplete" in n for n in run.notes)
    assert run.compiles_reported == 1 and any("did not exit cleanly" in n for n in run.notes)


def test_reader_reads_leftover_debug_output(tmp_path: Path) -> None:
    proc = _journal(tmp_path, STEP_LINES)
    shutil.copy(DATA / "pt_xla_debug.txt", proc / fmt.DEBUG_FILE)
    (run,) = read_capture(proc)
    tail = [s for s in run.syncs if s.step == 2]
    assert len(tail) == 7 and sum(s.compiled for s in tail) == 4
    assert run.steps[-1].index == 2 and run.compiles_reported == 1 + 4
    assert any("leftover" in n for n in run.notes)


def test_reader_starts_where_the_journal_stopped_reading(tmp_path: Path) -> None:
    offset = DEBUG_TEXT.index("\n\nCompilation Analysis: ====", 10)  # the second compile's block
    last = STEP_LINES[-1].replace('"e":[[0,0,0,0]]}', f'"e":[[0,0,0,0]],"o":{offset}}}')
    proc = _journal(tmp_path, [*STEP_LINES[:-1], last])
    shutil.copy(DATA / "pt_xla_debug.txt", proc / fmt.DEBUG_FILE)
    (run,) = read_capture(proc)
    expected, _ = fold_executions(parse_pt_xla_debug(DEBUG_TEXT[offset:])[0])
    tail = [s for s in run.syncs if s.step == 2]
    assert [(s.cause, s.compiled) for s in tail] == [(e.cause, e.compiled) for e in expected]
    assert len(tail) == 5


def test_reader_rejects_other_folders(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        read_capture(tmp_path)
    with pytest.raises(InputError):
        read_capture(tmp_path / "missing")


# Hand-written HLO (merge_lines edge cases; the real case, checked against a run with source lines
# always on, is tests/test_capture.py::test_source_lines_off_when_steady_...): two same-shape
# weights transposed alike, told apart only by their users, and a metadata string holding braces
# and an escaped quote.
_COMPILED = """HloModule SyncTensorsGraph.9, entry_computation_layout={(f32[2,2]{1,0}, f32[2,2]{1,0})->(f32[2,2]{1,0}, f32[2,2]{1,0})}

ENTRY %SyncTensorsGraph.9 (p0.1: f32[2,2], p1.2: f32[2,2]) -> (f32[2,2], f32[2,2]) {
  %p0.1 = f32[2,2]{1,0} parameter(0)
  %transpose.3 = f32[2,2]{1,0} transpose(f32[2,2]{1,0} %p0.1), dimensions={1,0}, metadata={op_type="aten__permute" op_name="aten__permute"}
  %tanh.4 = f32[2,2]{1,0} tanh(f32[2,2]{1,0} %transpose.3), metadata={op_type="aten__tanh" op_name="aten__tanh"}
  %p1.2 = f32[2,2]{1,0} parameter(1)
  %transpose.5 = f32[2,2]{1,0} transpose(f32[2,2]{1,0} %p1.2), dimensions={1,0}
  %exponential.6 = f32[2,2]{1,0} exponential(f32[2,2]{1,0} %transpose.5), metadata={op_type="aten__exp" op_name="aten__exp"}
  ROOT %tuple.7 = (f32[2,2]{1,0}, f32[2,2]{1,0}) tuple(f32[2,2]{1,0} %tanh.4, f32[2,2]{1,0} %exponential.6)
}
"""  # noqa: E501
_LOWERED = """HloModule IrToHlo.9, entry_computation_layout={(f32[2,2]{1,0}, f32[2,2]{1,0})->(f32[2,2]{1,0}, f32[2,2]{1,0})}

ENTRY %IrToHlo.9 (p0.1: f32[2,2], p1.2: f32[2,2]) -> (f32[2,2], f32[2,2]) {
  %p0.1 = f32[2,2]{1,0} parameter(0)
  %transpose.5 = f32[2,2]{1,0} transpose(f32[2,2]{1,0} %p0.1), dimensions={1,0}, metadata={op_type="aten__permute" op_name="b/{x}\\"" source_file="/u/m.py" source_line=7}
  %exponential.6 = f32[2,2]{1,0} exponential(f32[2,2]{1,0} %transpose.5), metadata={op_type="aten__exp" op_name="aten__exp" source_file="/u/m.py" source_line=8}
  %p1.2 = f32[2,2]{1,0} parameter(1)
  %transpose.3 = f32[2,2]{1,0} transpose(f32[2,2]{1,0} %p1.2), dimensions={1,0}, metadata={op_type="aten__permute" op_name="aten__permute" source_file="/u/m.py" source_line=4}
  %tanh.4 = f32[2,2]{1,0} tanh(f32[2,2]{1,0} %transpose.3), metadata={op_type="aten__tanh" op_name="aten__tanh" source_file="/u/m.py" source_line=5}
  ROOT %tuple.7 = (f32[2,2]{1,0}, f32[2,2]{1,0}) tuple(f32[2,2]{1,0} %exponential.6, f32[2,2]{1,0} %tanh.4)
}
"""  # noqa: E501


def test_merge_lines_pairs_instructions_by_structure_not_by_name() -> None:
    from xlagraph.canonical import canonicalize
    from xlagraph.capture.lines import merge_lines
    from xlagraph.parse.hlo import parse_hlo

    merged, count = merge_lines(_COMPILED, _LOWERED, "compiled.hlo", "lowered.hlo")
    assert count == 4
    lines = {line.split("=", 1)[0].strip(): line for line in merged.splitlines() if " = " in line}
    # the transposes have one hash; their users (tanh: line 5, exp: line 8) decide which is which
    assert "source_line=4}" in lines["%transpose.3"] and "source_line=5}" in lines["%tanh.4"]
    assert 'op_name="b/{x}\\"" source_file="/u/m.py" source_line=7}' in lines["%transpose.5"]
    assert lines["%transpose.5"].count("metadata=") == 1  # added where the dump had none
    assert "source_line=8}" in lines["%exponential.6"]
    same = canonicalize(parse_hlo(merged, "merged.hlo")).fingerprint
    assert same == canonicalize(parse_hlo(_COMPILED, "compiled.hlo")).fingerprint


@pytest.mark.parametrize(("lines_from", "used"), [("scale_0.hlo", True), ("scale_1.hlo", False)])
def test_reader_uses_merged_lines_only_for_the_same_graph(
    tmp_path: Path, lines_from: str, used: bool
) -> None:
    # scale_1.hlo is scale_0.hlo with another constant: a lines module that is not the compiled
    # graph (a damaged or edited folder) is refused, never read in its place
    graph = '{"k":"graph","id":0,"hash":"abc123abc123abc123","in":1,"out":1,"step":0,"compiled":true,'
    graph += '"module":"hlo/m.txt","lines_off":true}\n'
    update = (
        '{"k":"graph","id":0,"lines_step":1,"lines_module":"lines/abc123abc123abc123.txt","lines_count":3}\n'
    )
    proc = _journal(tmp_path, [*STEP_LINES[:3], graph, *STEP_LINES[4:], update])
    (proc / fmt.HLO_DIR).mkdir()
    (proc / fmt.LINES_DIR).mkdir()
    shutil.copy(DATA / "scale_0.hlo", proc / fmt.HLO_DIR / "m.txt")
    shutil.copy(DATA / lines_from, proc / fmt.LINES_DIR / "abc123abc123abc123.txt")
    (run,) = read_capture(tmp_path / "cap")
    module = run.graphs["abc123abc123abc123"].module
    assert module.endswith("lines/abc123abc123abc123.txt" if used else "hlo/m.txt")
    expected = "its lines come from its run at step 1" if used else "not the same graph: not used"
    assert any(expected in n for n in run.notes), run.notes


def test_reader_says_when_a_late_graph_has_no_lines(tmp_path: Path) -> None:
    graph = '{"k":"graph","id":0,"hash":"abc123abc123abc123","in":1,"out":1,"step":0,"compiled":true,'
    graph += '"lines_off":true}\n'
    (run,) = read_capture(_journal(tmp_path, [*STEP_LINES[:3], graph, *STEP_LINES[4:]]))
    assert any(
        "compiled while source lines were off and its lines were not recovered" in n for n in run.notes
    )
