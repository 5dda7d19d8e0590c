"""Binary HLO dumps (`HloModuleProto`, `HloProto`): read as the text XLA prints for the same
module, so every command answers on a `.pb` exactly as on its text.

The truth is XLA's own: a torch_xla 2.9 run dumped each module both ways
(`fixtures/torch_xla/proto/`), and for every HLO text module of the fixtures that XLA's parser
accepts, jaxlib writes the proto and prints the module; reading the proto must give a module
`diff` calls identical to XLA's print of it, with the same lines cited.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlagraph
from cli.main import xlagraph as xlagraph_cli
from xlagraph.errors import InputError
from xlagraph.parse.sources import open_source, read

ROOT = Path(__file__).resolve().parent.parent
DUMP = ROOT / "fixtures" / "torch_xla" / "proto" / "xla_dump"
JAX_DUMP = ROOT / "fixtures" / "jax" / "proto" / "xla_dump"  # SPMD: shardings and collectives
PROTOS = sorted(DUMP.glob("*.hlo.pb"))
ALL_PROTOS = PROTOS + sorted(JAX_DUMP.glob("*.hlo.pb"))


def _text_twin(pb: Path) -> Path:
    return pb.with_name(pb.name.removesuffix(".hlo.pb") + ".txt")


def _lines(module: xlagraph.Module) -> dict[tuple[str, str], tuple[str, str, str]]:
    return {
        (c.name, i.name): (i.source, i.op_type, i.op_name)
        for c in module.computations
        for i in c.instructions
    }


@pytest.mark.parametrize("pb", ALL_PROTOS, ids=lambda p: f"{p.parent.parent.parent.name}-{p.name}")
def test_dumped_proto_reads_as_its_text(pb: Path) -> None:
    text = _text_twin(pb)
    d = xlagraph.diff(str(pb), str(text))
    assert d.verdict == "identical", d.to_text()
    a, b = xlagraph.load(str(pb)), xlagraph.load(str(text))
    assert a.instruction_count == b.instruction_count
    assert _lines(a) == _lines(b)
    if pb.parent == DUMP:
        assert any("train.py:" in source for source, _, _ in _lines(a).values())  # the script's lines


def _without_paths(d: dict) -> dict:
    return {k: v for k, v in d.items() if k not in ("left", "right")}


@pytest.mark.parametrize("dump", [DUMP, JAX_DUMP], ids=["torch_xla", "jax"])
@pytest.mark.parametrize("stage", ["before_optimizations", "cpu_after_optimizations"])
def test_diff_of_protos_is_the_diff_of_their_texts(dump: Path, stage: str) -> None:
    a, b = sorted(dump.glob(f"module_*.{stage}.hlo.pb"))
    from_protos = xlagraph.diff(str(a), str(b))
    from_texts = xlagraph.diff(str(_text_twin(a)), str(_text_twin(b)))
    assert from_protos.verdict == "different"
    assert _without_paths(from_protos.to_dict()) == _without_paths(from_texts.to_dict())
    if dump == DUMP and stage == "before_optimizations":  # the batch grew: the script's lines
        assert "fixtures/torch_xla/proto/train.py:11" in from_protos.to_text()


def test_dump_folder_of_protos_only(tmp_path: Path) -> None:
    for pb in PROTOS:
        shutil.copy(pb, tmp_path / pb.name)
    source = open_source(str(tmp_path))
    both = open_source(str(DUMP))
    # A folder with both dumps of each module reads its text, never the same module twice.
    assert len(source.graphs) == len(both.graphs) == len(PROTOS)
    assert all(g.path.endswith(".txt") for g in both.graphs)
    for g_pb, g_txt in zip(source.graphs, both.graphs, strict=True):
        assert g_pb.info.stage == g_txt.info.stage
        assert xlagraph.diff(g_pb.path, g_txt.path).verdict == "identical"


def test_compile_cache_folder(tmp_path: Path) -> None:
    """Neuron's compile cache keeps one `MODULE_<hash>/model.hlo_module.pb` per graph."""
    befores = sorted(DUMP.glob("module_*.before_optimizations.hlo.pb"))
    for n, pb in enumerate(befores):
        folder = tmp_path / "neuronxcc-2.0" / f"MODULE_{n}abc+def"
        folder.mkdir(parents=True)
        target = folder / "model.hlo_module.pb"
        shutil.copy(pb, target)
        (folder / "model.neff").write_bytes(b"\0neff")
        os.utime(target, ns=(10**18 + n, 10**18 + n))
    source = open_source(str(tmp_path / "neuronxcc-2.0"))
    assert [g.label for g in source.graphs] == [
        f"MODULE_{n}abc+def/model.hlo_module.pb" for n in range(len(befores))
    ]
    result = CliRunner().invoke(
        xlagraph_cli, ["diff", f"{tmp_path}/neuronxcc-2.0#0", f"{tmp_path}/neuronxcc-2.0#1"]
    )
    assert result.exit_code == 1, result.output
    assert "train.py:11" in result.output


def _run_cli(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(xlagraph_cli, list(args))


@pytest.mark.parametrize("cut", [1, 7, 100, 1000, -1])
def test_truncated_proto_is_one_line_error(tmp_path: Path, cut: int) -> None:
    data = PROTOS[0].read_bytes()
    bad = tmp_path / "cut.hlo.pb"
    bad.write_bytes(data[:cut] if cut > 0 else data[:-3])
    result = _run_cli("graphs", str(bad))
    assert result.exit_code == 2, (result.output, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlagraph: error: ") and str(bad) in lines[0], (
        result.stderr
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), min_size=1, max_size=6
    ),
    st.integers(min_value=0),
)
def test_damaged_proto_reads_or_fails_cleanly(tmp_path: Path, edits: list[tuple[int, int]], cut: int) -> None:
    """Flipped bytes and a cut: the module is read, or `InputError` names the file; never any other
    exception (no traceback, no hang)."""
    data = bytearray(PROTOS[0].read_bytes())
    for at, value in edits:
        data[at % len(data)] = value
    data = data[: max(1, cut % (len(data) + 1))]
    bad = tmp_path / "damaged.hlo.pb"
    bad.write_bytes(bytes(data))
    try:
        source = open_source(str(bad))
        for g in source.graphs:
            read(g)
    except InputError as e:
        assert str(bad) in str(e)


def _fixture_texts() -> list[str]:
    found = glob.glob(str(ROOT / "fixtures" / "**" / "*.hlo"), recursive=True)
    found += glob.glob(str(ROOT / "fixtures" / "**" / "*.txt"), recursive=True)
    return sorted(f for f in found if os.path.getsize(f) < 20_000_000)


def test_every_fixture_module_reads_from_xla_proto_as_xla_prints_it(tmp_path: Path) -> None:
    """Every HLO module of the fixtures (torch_xla, JAX, XLA's own parser tests, dumps of many
    XLA versions) that XLA's parser accepts: XLA writes it as a proto; xlagraph reads the proto as
    a module identical to XLA's print of it."""
    pytest.importorskip("jaxlib._hlo")
    out = tmp_path / "protos"
    subprocess.run(
        [sys.executable, str(ROOT / "tests" / "_xla_protos.py"), str(out), *_fixture_texts()], check=True
    )
    pbs = sorted(out.glob("*.pb"), key=lambda p: int(p.stem))
    assert len(pbs) > 1000
    failures = []
    for pb in pbs:
        ref = pb.with_suffix(".ref")
        ref_hlo = pb.with_suffix(".hlo")
        ref_hlo.write_text(ref.read_text())
        try:
            xlagraph.load(str(ref_hlo))
        except InputError:
            continue  # XLA prints something xlagraph refuses (tested elsewhere): nothing to compare
        try:
            verdict = xlagraph.diff(str(pb), str(ref_hlo)).verdict
        except InputError as e:
            verdict = f"error: {e}"
        if verdict != "identical":
            failures.append((pb.with_suffix(".src").read_text(), verdict))
    assert not failures, failures[:20]


def _generator():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "proto_generate", ROOT / "fixtures/torch_xla/proto/generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_field_the_printer_does_not_know_still_differs(tmp_path: Path) -> None:
    """A newer XLA's field on one instruction (number 200 here) is never dropped: the module is
    read, and it is not identical to the same module without it."""
    g = _generator()
    data = (ROOT / "tests/data/step.hlo.pb").read_bytes()

    def instruction(f: dict) -> None:
        f[200] = [7]

    def computation(f: dict) -> None:
        f[2] = [g._rewrite(f[2][0], instruction), *f[2][1:]]

    def module(f: dict) -> None:
        f[3] = [*f[3][:-1], g._rewrite(f[3][-1], computation)]

    changed = tmp_path / "changed.hlo.pb"
    changed.write_bytes(g._rewrite(data, module))
    d = xlagraph.diff(str(ROOT / "tests/data/step.hlo.pb"), str(changed))
    assert d.verdict == "different"
    assert "xlagraph.proto_fields" in d.to_text()


@pytest.mark.parametrize("wrapper", ["HloModuleProto", "HloSnapshot", "HloUnoptimizedSnapshot"])
def test_every_message_xla_keeps_a_module_in(tmp_path: Path, wrapper: str) -> None:
    """--xla_dump_hlo_as_proto writes an HloProto (the module in field 1); a compile cache an
    HloModuleProto; --xla_dump_hlo_snapshots an HloSnapshot (an HloProto in field 1, arguments
    after it); replay tools an HloUnoptimizedSnapshot (the module in field 1)."""
    g = _generator()
    from xlagraph.parse.proto_wire import Message

    hlo_proto = PROTOS[0].read_bytes()
    module = Message(hlo_proto).raw(1)
    data = {
        "HloModuleProto": module,
        "HloSnapshot": g._encode({1: [hlo_proto], 4: [b"Host"]}),
        "HloUnoptimizedSnapshot": g._encode({1: [module]}),
    }[wrapper]
    path = tmp_path / "graph.pb"
    path.write_bytes(data)
    assert xlagraph.diff(str(path), str(_text_twin(PROTOS[0]))).verdict == "identical"


def test_the_proto_capture_writes_reads_back() -> None:
    """Capture's fingerprints hand XLA a module written as a proto (`_fingerprint_reduce`, one variadic
    reduce); the proto reader, written apart from it, reads it as that reduce: both agree on
    XLA's field numbers."""
    from xlagraph.capture._fingerprint_reduce import _module
    from xlagraph.ir import strip_layout
    from xlagraph.parse.hlo import parse_hlo
    from xlagraph.parse.hlo_proto import proto_to_text

    text = proto_to_text(_module([3, 4, 5]))
    module = parse_hlo(text, "sum4")
    root = module.entry.root
    assert root.opcode == "reduce" and len(root.operands) == 8
    assert strip_layout(root.shape).replace(" ", "") == "(s64[3],s64[3],s64[3],f64[3])"
    assert dict(root.attributes)["dimensions"] == "{1,2}"
