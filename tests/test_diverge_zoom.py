"""The second pass of `xlagraph diverge` (XLAGRAPH_ZOOM=K): the first op and line where two runs'
values part, on real captures (fixtures/divergence/generate.py: zoom_* were run with
XLAGRAPH_ZOOM=2 on torch_xla 2.9 CPU and on eager PyTorch). No torch needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from xlagraph.cli.main import xlagraph

from xlagraph.diverge import diverge, zoom_in
from xlagraph.diverge.zoom import load_zoom
from xlagraph.errors import InputError
from xlagraph.render.diverge_json import divergence_to_json

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "divergence"
SCRIPT = (FIX / "train.py").read_text(encoding="utf-8").splitlines()
BACKENDS = ("eager", "xla")


def _line(code: str) -> int:
    """The line of train.py holding `code` (the fixtures cite it; found, not hard-coded)."""
    return next(i for i, text in enumerate(SCRIPT, 1) if text.strip().startswith(code))


def cap(backend: str, name: str) -> Path:
    path = FIX / backend / name
    if not path.is_dir():
        pytest.fail(f"missing {path}: run fixtures/divergence/generate.py")
    return path


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_changed_learning_rate_parts_at_the_optimizer_update_on_the_user_s_step_line(backend):
    d = diverge(cap(backend, "zoom_ref"), cap(backend, "zoom_lr2"))
    assert d.first_step == 2 and d.first[0].role == "param"
    z = d.zoom
    assert z is not None and z.kind == "value" and z.step == 2, z
    assert z.a is not None and z.b is not None and z.a.signature == z.b.signature
    assert z.a.at.endswith(f"train.py:{_line('opt.step()')}"), z.a
    assert z.a.lib.startswith("torch/optim/adam.py:"), z.a
    assert z.compared > 0 and z.a.index == z.compared  # everything before it agreed, bit for bit
    # The op was handed another step size (lr x 10): a Python value, not the tensors it reads.
    assert z.a.args != z.b.args and "passed other values" in z.why, z.why


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_nan_written_into_a_gradient_is_other_ops_at_the_user_s_line(backend):
    d = diverge(cap(backend, "zoom_ref"), cap(backend, "zoom_nan2"))
    z = d.zoom
    assert z is not None and z.kind == "ops", z
    assert z.b is not None and z.b.at.endswith(f"train.py:{_line('model.encoder.layers[1].fc1.weight.grad')}")
    assert z.a is not None and z.a.at.endswith(f"train.py:{_line('opt.step()')}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_ops_are_observed_with_their_autograd_node_at_the_backward_line(backend):
    _, values, note = load_zoom(str(next(cap(backend, "zoom_ref").iterdir())))
    assert not note
    backward = [v for v in values if v.node]
    assert backward, "no op ran in backward"
    assert all(v.at.endswith(f"train.py:{_line('loss.backward()')}") for v in backward)
    assert {v.at for v in values} <= {
        f"fixtures/divergence/train.py:{n}" for n in range(1, len(SCRIPT) + 1)
    }, "an op was cited outside the user's script (or with an absolute path)"


def test_observing_does_not_change_eager_values():
    """The eager zoom pass fingerprints values as ops return them: the run itself is unchanged."""
    assert diverge(cap("eager", "ref"), cap("eager", "zoom_ref")).verdict == "bit_exact"


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_a_zoom_pass_the_note_says_how_to_get_one(backend):
    d = diverge(cap(backend, "ref"), cap(backend, "seed1"))
    assert d.zoom is None
    assert any("XLAGRAPH_ZOOM=0" in n for n in d.notes), d.notes


@pytest.mark.parametrize("backend", BACKENDS)
def test_zoom_on_one_side_only_or_at_another_step_is_a_note_not_a_finding(backend):
    d = diverge(cap(backend, "zoom_ref"), cap(backend, "seed1"))
    assert d.zoom is not None and d.zoom.kind == "none"
    assert "XLAGRAPH_ZOOM" in d.zoom.note


@pytest.mark.parametrize("backend", BACKENDS)
def test_cli_text_and_json_name_the_op(backend):
    a, b = cap(backend, "zoom_ref"), cap(backend, "zoom_lr2")
    text = CliRunner().invoke(xlagraph, ["diverge", str(a), str(b)])
    assert text.exit_code == 1
    assert f"train.py:{_line('opt.step()')}" in text.output and "zoom (step 2" in text.output
    out = CliRunner().invoke(xlagraph, ["diverge", str(a), str(b), "--json"])
    d = json.loads(out.output)
    assert d["zoom"]["kind"] == "value" and d["zoom"]["a"]["user_line"].endswith(f":{_line('opt.step()')}")
    assert d["first"]["step"] == 2  # the contract's keys are unchanged
    assert divergence_to_json(diverge(a, b)) == d


def test_a_malformed_zoom_file_is_one_line_naming_file_and_line(tmp_path):
    (tmp_path / "zoom.jsonl").write_text('{"k":"zoom","step":2,"ops":1}\n{"k":"v","i":0}\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_zoom(str(tmp_path))
    assert e.value.line == 2 and "zoom.jsonl" in e.value.path


def test_a_stopped_zoom_pass_is_reported_as_such(tmp_path):
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "zoom.jsonl").write_text(
            '{"k":"error","v":"RuntimeError: boom"}\n', encoding="utf-8"
        )
    z = zoom_in(str(tmp_path / "a"), str(tmp_path / "b"), 2)
    assert z is not None and z.kind == "none" and "boom" in z.note


def test_an_endless_zoom_file_is_refused_not_read_into_memory(tmp_path, monkeypatch):
    from xlagraph.diverge import zoom

    monkeypatch.setattr(zoom, "MAX_RECORDS", 3)
    record = '{"k":"v","i":0,"op":"add","shape":[1],"dtype":"float32","fp":[0,0,0,0,0]}\n'
    (tmp_path / "zoom.jsonl").write_text('{"k":"zoom","step":0,"ops":9}\n' + record * 9, encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_zoom(str(tmp_path))
    assert e.value.line == 5 and "not a zoom pass" in e.value.message
