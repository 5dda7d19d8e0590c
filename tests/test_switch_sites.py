"""Where the user's code decides a recompile (issue 37), on real torch_xla 2.9 captures:
fixtures/torch_xla/switch_sites, made by its generate.py under XLAGRAPH_CAPTURE on the CPU device.

* amp_from_step: a conv classifier under `torch.autocast(..., enabled=amp)` with `amp = step >= 3`.
  The dtype cause cites the `with` and the `amp = ...` line before the layer's forward lines, and
  no output is called removed: in f32 the gradients are views of their dots (whose bases torch_xla
  returns too), in bf16 converts of bf16 dots;
* amp_with_probe: the same switch on an MLP, while a probe kept alive on the f32 steps stops being
  computed: the probe is still named as a removed output, and only it;
* ema_key_order: per-name statistics updated in a loop whose order flips (`names = list(d) if ...
  else list(reversed(d))`): the permutation cites the `for` and the line that builds `names`;
* shuffled_buffers: a helper that shuffles an index list (`random.shuffle(order)` just before a
  `for ... in zip(order, ...)`) and rebinds per-layer peaks in that order.

The report is read as `xlagraph report --json` writes it; a cause's `at` lines are its
attribution's `lines`."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose import CauseKind
from xlagraph.diff import diff_files
from xlagraph.render.report_json import report_to_json
from xlagraph.report import build_report, load_runs

SITES = FIXTURES / "torch_xla" / "switch_sites"


@cache
def _report(name: str) -> dict[str, Any]:
    folder = SITES / f"{name}_capture"
    if not folder.is_dir():
        pytest.fail(f"missing {folder}: run fixtures/torch_xla/switch_sites/generate.py")
    (log,) = load_runs(str(folder))
    return report_to_json((build_report(log),))


def _line(name: str, text: str) -> str:
    """`file:line` of the first line of the script that contains `text`."""
    lines = (SITES / f"{name}.py").read_text(encoding="utf-8").splitlines()
    n = next(i for i, line in enumerate(lines, 1) if text in line)
    return f"fixtures/torch_xla/switch_sites/{name}.py:{n}"


def _causes(name: str, step: int) -> list[dict[str, Any]]:
    """The causes of the recompile at `step`, each with `at`: the user's lines the report shows
    for it (its attribution's `lines`)."""
    (r,) = [r for r in _report(name)["recompiles"] if r["step"] == step]
    at = {a["cause"]: a["lines"] for a in r["attribution"]}
    return [{**c, "at": at.get(i, [])} for i, c in enumerate(r["causes"])]


def _at(cause: dict[str, Any]) -> list[str]:
    return list(cause["at"])


def test_the_precision_switch_is_cited_before_the_layers_lines() -> None:
    (dtype,) = [c for c in _causes("amp_from_step", 3) if c["kind"] == "dtype"]
    at = _at(dtype)
    switch = [_line("amp_from_step", "with torch.autocast("), _line("amp_from_step", "amp = step >= 3")]
    assert at[:2] == switch, at
    # The layer lines the ops carry stay cited after them.
    assert _line("amp_from_step", "h = torch.relu(self.norm(") in at, at


def test_no_output_is_removed_beside_the_precision_switch() -> None:
    kinds = [c["kind"] for c in _causes("amp_from_step", 3)]
    assert kinds == ["dtype"], kinds


def test_a_probe_dropped_at_the_switch_is_still_named_and_alone() -> None:
    causes = _causes("amp_with_probe", 3)
    assert sorted(c["kind"] for c in causes) == ["dtype", "output_removed"], [c["summary"] for c in causes]
    (dtype,) = [c for c in causes if c["kind"] == "dtype"]
    assert _at(dtype)[:2] == [
        _line("amp_with_probe", "with torch.autocast("),
        _line("amp_with_probe", "low_precision = it >= 3"),
    ], _at(dtype)
    (removed,) = [c for c in causes if c["kind"] == "output_removed"]
    assert "1 tensor fewer" in removed["summary"] and "f32[]" in removed["summary"], removed["summary"]
    assert _at(removed)[0] == _line("amp_with_probe", "probe = hidden.detach()"), _at(removed)
    # The probe's line is its own: the dtype cause does not cite it.
    assert _line("amp_with_probe", "probe = hidden.detach()") not in _at(dtype), _at(dtype)


def test_the_loop_and_the_line_that_orders_it_are_cited_first() -> None:
    name = "ema_key_order"
    for step in (1, 2):
        (order,) = [c for c in _causes(name, step) if c["kind"] == "output_permutation"]
        assert _at(order)[:3] == [
            _line(name, "for name in names:"),
            _line(name, "names = list(weights) if"),
            _line(name, "stats[name].mul_(0.9)"),
        ], (step, _at(order))


def test_a_shuffle_before_a_zipped_loop_in_a_helper_is_cited() -> None:
    name = "shuffled_buffers"
    (order,) = [c for c in _causes(name, 2) if c["kind"] == "output_permutation"]
    assert _at(order)[:4] == [
        _line(name, "for k, act in zip(order,"),
        _line(name, "order = list(range(len(acts)))"),
        _line(name, "random.shuffle(order)"),
        _line(name, "peaks[k] = torch.maximum("),
    ], _at(order)


def test_an_outer_loop_whose_variable_the_inner_loop_iterates_is_cited_too() -> None:
    """The corpus's tu_layerwise_lr_order: `for name, lr in sorted(layer_lrs(step).items(), ...)`
    around `for p in model[name].parameters()`: the inner loop's order is the outer one's, sorted
    by the rates `layer_lrs` returns (its `return`, cited after the outer loop's header)."""
    (log,) = load_runs(str(FIXTURES / "torch_xla" / "corpus" / "captures" / "tu_layerwise_lr_order"))
    doc = report_to_json((build_report(log),))
    script = "scripts/tu_layerwise_lr_order.py"
    text = (FIXTURES / "torch_xla" / "corpus" / script).read_text(encoding="utf-8").splitlines()
    outer = next(n for n, line in enumerate(text, 1) if "for name, lr in sorted(" in line)
    rates = next(n for n, line in enumerate(text, 1) if 'return {"body"' in line)
    attributions = [a for r in doc["recompiles"] for a in r["attribution"]]
    cited = [a["lines"] for a in attributions if a["kind"] == "output_permutation"]
    assert cited
    for lines in cited:
        expected = [outer + 1, outer, rates, outer + 2]
        assert lines[:4] == [f"{script}:{n}" for n in expected], lines


def test_a_whole_model_cast_in_the_function_that_runs_the_step_is_cited() -> None:
    """fixtures/torch_xla/parallel's dtype_gpt2 pair: GPT-2 cast with `.to(dtype)` in the
    function that builds and runs the step; its ops carry the model's lines, the cast is cited
    before them."""
    parallel = FIXTURES / "torch_xla" / "parallel"
    result = diff_files(str(parallel / "dtype_gpt2_a.hlo"), str(parallel / "dtype_gpt2_b.hlo"))
    (dtype,) = [c for c in result.causes if c.kind is CauseKind.DTYPE]
    text = (parallel / "generate.py").read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(text, 1) if line.startswith("def dtype_gpt_step("))
    cast = next(n for n, line in enumerate(text, 1) if n > start and ".to(dtype)" in line)
    assert dtype.sources[0].endswith(f"fixtures/torch_xla/parallel/generate.py:{cast}"), dtype.sources
