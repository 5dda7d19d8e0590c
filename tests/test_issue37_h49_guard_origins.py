"""held_out_49's three torch.compile guards named by kind but not at the user's line (issue 37),
each rule on the scored capture and on one more real torch_xla 2.9 capture (CPU) of the same
pattern with another model and names (`fixtures/torch_xla/guard_cause/generate.py`):

* a dict-key guard (`not ___dict_contains('w', batch)`): the key was stored into the dict the
  compiled function received; the recompile's `conditional_work` cites that store beside the `if`
  that reads it; heron (`h49_heron_openxla_weights_key`, the dict built in a helper whose call is
  passed) and `guard_cause/mask_key_openxla` (the dict built by name in the loop);
* a Python-number argument's guard (`temp == 2.0`) whose new value is a special scalar the graph
  bakes: the `constant_value` names the argument and the value the compiled code assumed, and
  cites first where the caller computes it (a schedule's `return`, through the call's argument
  expression); wren (`h49_wren_openxla_kd_temperature`, positional) and
  `guard_cause/smoothing_scalar_openxla` (a keyword, 0.0 baked);
* an input's dtype guard (`Int -> Long`) for a tensor a generator yields: the dtype cause cites
  first the line that gives the data its new dtype in the generator's class or function
  (`.astype(np.int64)`); finch (`h49_finch_openxla_ids_int64`, a class's `__iter__`) and
  `guard_cause/features_double_openxla` (a generator function, float64 blocks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.report.model import RunReport

CORPUS = FIXTURES / "torch_xla" / "corpus" / "captures"
GUARD_CAUSE = FIXTURES / "torch_xla" / "guard_cause"


def _line(capture: Path, cited: str, text: str) -> str:
    script = FIXTURES.parent / cited if cited.startswith("fixtures/") else capture.parents[1] / cited
    lines = script.read_text(encoding="utf-8").splitlines()
    return f"{cited}:{next(i for i, t in enumerate(lines, 1) if text in t)}"


def _fixed(report: RunReport, step: int) -> list:  # type: ignore[type-arg]
    return [r for r in report.recompiles if not r.expected and r.step == step]


def _guard(report: RunReport, step: int):  # type: ignore[no-untyped-def]
    """The first failed guard of the torch.compile recompile at `step`."""
    assert report.dynamo is not None
    (event,) = [e for e in report.dynamo.recompiles if e.step == step and e.guards]
    return event.guards[0]


_HERON = "h49_heron_openxla_weights_key"
KEYS = {
    "heron": (CORPUS / _HERON, f"scripts/{_HERON}.py", 6, 'if "w" in batch:', 'batch["w"] = ', "batch", "w"),
    "mask_key": (
        GUARD_CAUSE / "mask_key_openxla_capture",
        "fixtures/torch_xla/guard_cause/mask_key_openxla.py",
        4,
        '    if "valid" in feed:',  # (the docstring says it too)
        '        feed["valid"] = ',
        "feed",
        "valid",
    ),
}


@pytest.mark.parametrize("name", sorted(KEYS))
def test_a_dict_key_guard_cites_where_the_key_is_stored(name: str) -> None:
    capture, cited, step, test, store, dict_name, key = KEYS[name]
    report = capture_report(capture)
    guard = _guard(report, step)
    assert guard.kind == "dict_key" and f"`{dict_name}` has key '{key}' now" in guard.phrase
    assert guard.origin == _line(capture, cited, store), guard.origin
    fixed = _fixed(report, step)
    assert fixed
    for r in fixed:
        (cause,) = [c for c in r.causes if not c.info]
        assert cause.kind.value == "conditional_work", (r.variant, cause.kind)
        # the `if` that reads the key, then the store a user changes
        assert cause.sources[:2] == (_line(capture, cited, test), _line(capture, cited, store)), cause.sources
        assert f"set at {_line(capture, cited, store)}" in cause.summary


_WREN = "h49_wren_openxla_kd_temperature"
SCALARS = {
    "wren": (CORPUS / _WREN, f"scripts/{_WREN}.py", 6, "return SCHEDULE[", "temp", "2.0", "distill_loss"),
    "smoothing": (
        GUARD_CAUSE / "smoothing_scalar_openxla_capture",
        "fixtures/torch_xla/guard_cause/smoothing_scalar_openxla.py",
        4,
        "return LEVELS[",
        "eps",
        "0.1",
        "smoothed_nll",
    ),
}


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_a_baked_python_argument_is_named_where_it_is_computed(name: str) -> None:
    capture, cited, step, computed, arg, assumed, function = SCALARS[name]
    report = capture_report(capture)
    origin = _line(capture, cited, computed)
    assert _guard(report, step).origin == origin
    baked = [
        (r, c)
        for r in _fixed(report, step)
        for c in r.causes
        if c.kind.value == "constant_value" and not c.info
    ]
    assert baked
    for r, cause in baked:
        assert (
            f"`{arg}` changed (the compiled code assumed {arg} == {assumed}) in `{function}`" in cause.summary
        )
        assert f"computed at {origin}" in cause.summary
        (lines,) = [a.lines for a in r.attribution if r.causes[a.cause] is cause]
        assert lines[0] == origin, (r.variant, lines)
    # the graph the guard's retrace compiled first is that constant's
    assert _fixed(report, step)[0].causes[0].kind.value == "constant_value"


_FINCH = "h49_finch_openxla_ids_int64"
DTYPES = {
    "finch": (CORPUS / _FINCH, f"scripts/{_FINCH}.py", 6, ".astype(np.int64)", "Int -> Long"),
    "features_double": (
        GUARD_CAUSE / "features_double_openxla_capture",
        "fixtures/torch_xla/guard_cause/features_double_openxla.py",
        4,
        ".astype(np.float64)",
        "Float -> Double",
    ),
}


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_a_yielded_input_s_dtype_is_cited_where_its_data_gets_the_dtype(name: str) -> None:
    capture, cited, step, spelled, change = DTYPES[name]
    report = capture_report(capture)
    made = _line(capture, cited, spelled)
    guard = _guard(report, step)
    assert guard.kind == "tensor_dtype" and change in guard.phrase
    assert guard.origin == made, guard.origin
    first = _fixed(report, step)[0]
    (cause,) = [c for c in first.causes if c.kind.value == "dtype" and not c.info]
    (lines,) = [a.lines for a in first.attribution if first.causes[a.cause] is cause]
    assert lines[0] == made, lines


def test_a_yield_that_makes_the_tensor_is_its_origin_without_a_dtype_spelled() -> None:
    """Where no line of the generator spells the new dtype (numpy's default float64), the tensor is
    made at the yield that wraps the array: that line, not the `for` over the generator."""
    from xlagraph.diagnose.guard_lines import dtype_made
    from xlagraph.diagnose.recognizers._value_made import loop_source

    cited = "fixtures/torch_xla/guard_cause/features_double_openxla.py"
    capture = GUARD_CAUSE / "features_double_openxla_capture"
    capture_report(capture)  # the stored sources are the analysis's
    loop = int(_line(capture, cited, "for feats, target in feature_blocks()").rsplit(":", 1)[1])
    yielded = _line(capture, cited, "yield torch.from_numpy(feats)")
    assert f"{cited}:{loop_source(cited, loop, 'feats')}" == yielded
    # Half (float16) is spelled nowhere in the generator: the yield stays the answer
    assert dtype_made(yielded, "Half") == yielded
