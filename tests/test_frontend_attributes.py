"""`frontend_attributes` and `backend_config` are compiled from, so they make two graphs differ;
frontend entries that only restate a number (AWS Neuron's `neff_input_names="input5"`) do not, nor
does the order of a JSON backend config's keys (tests/test_jax_pairs.py: backend_config_order).

The JAX pairs are real (fixtures/jax/annotations/generate.py). The Neuron-style modules below are
hand-written, in the form the Neuron backend of torch_xla prints (every parameter named
`inputN` after its number, the root tuple's outputs `output0,...`).
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.conftest import FIXTURES
from xlagraph.canonical import canonicalize
from xlagraph.diff import diff_files, diff_modules
from xlagraph.parse.hlo import parse_hlo

PAIRS = FIXTURES / "jax" / "annotations"


def _pair(name: str):  # type: ignore[no-untyped-def]
    return diff_files(str(PAIRS / name / "a.hlo"), str(PAIRS / name / "b.hlo"))


def test_shardy_open_dimension_is_a_sharding_change() -> None:
    """`sharding=` prints the same; only `xla.sdy.sharding` says `{?}` (open) vs `{}` (closed)."""
    result = _pair("sdy_open_dims")
    assert result.verdict == "different"
    assert [c.kind.value for c in result.differences] == ["sharding"]
    assert "{?}" in result.differences[0].summary


def test_host_offloading_is_an_attribute_change_with_its_own_fix() -> None:
    result = _pair("compute_on_host")
    assert result.verdict == "different"
    (cause,) = result.differences
    assert cause.kind.value == "attribute"
    assert "_xla_compute_type" in cause.summary
    assert "compute_on" in cause.hint and "Python int" not in cause.hint


def test_lapack_triangle_is_a_kernel_configuration_change() -> None:
    """`eigh(UPLO="L")` vs `"U"`: only the custom-call's `backend_config` differs."""
    result = _pair("lapack_uplo")
    assert result.verdict == "different"
    (cause,) = result.differences
    assert cause.kind.value == "attribute" and "backend_config" in cause.summary
    assert "uplo=76" in cause.summary and "uplo=85" in cause.summary
    assert "Python int" not in cause.hint


@pytest.mark.parametrize("name", ["sdy_open_dims", "compute_on_host", "lapack_uplo"])
def test_fingerprints_differ_in_both_implementations(name: str) -> None:
    for side in ("a", "b"):
        module = parse_hlo((PAIRS / name / f"{side}.hlo").read_text())
        assert module.core is not None
        fast = canonicalize(module).fingerprint
        assert fast == canonicalize(dataclasses.replace(module, core=None)).fingerprint
    a, b = (canonicalize(parse_hlo((PAIRS / name / f"{s}.hlo").read_text())) for s in "ab")
    assert a.fingerprint != b.fingerprint


_NEURON = """HloModule SyncTensorsGraph.9

ENTRY %SyncTensorsGraph.9 (p0.1: f32[4,4], p1.2: f32[4]) -> (f32[4,4]{extra_shape}) {{
  %p{w}.1 = f32[4,4]{{1,0}} parameter({w}), frontend_attributes={{neff_input_names="input{w}"}}
  %p{b}.2 = f32[4]{{0}} parameter({b}), frontend_attributes={{neff_input_names="input{b}"}}
  %broadcast.3 = f32[4,4]{{1,0}} broadcast(f32[4]{{0}} %p{b}.2), dimensions={{1}}
  %add.4 = f32[4,4]{{1,0}} add(f32[4,4]{{1,0}} %p{w}.1, f32[4,4]{{1,0}} %broadcast.3)
  ROOT %tuple.5 = (f32[4,4]{{1,0}}{extra_shape}) tuple(f32[4,4]{{1,0}} %add.4{extra}), {names}
}}
"""


def _neuron(w: int = 0, b: int = 1, *, extra: bool = False, outputs: str = "") -> str:
    return _NEURON.format(
        w=w,
        b=b,
        extra=f", f32[4]{{0}} %p{b}.2" if extra else "",
        extra_shape=", f32[4]{0}" if extra else "",
        names='frontend_attributes={neff_output_names="%s"}'
        % (outputs or ("output0,output1" if extra else "output0")),
    )


def _diff(a: str, b: str):  # type: ignore[no-untyped-def]
    return diff_modules(parse_hlo(a), parse_hlo(b))


def test_neuron_numbering_is_not_compared() -> None:
    assert _diff(_neuron(), _neuron()).verdict == "identical"
    # The inputs swap numbers (and names with them): a permutation, not an attribute change.
    swapped = _diff(_neuron(0, 1), _neuron(1, 0))
    assert [c.kind.value for c in swapped.differences] == ["parameter_permutation"]
    # One output more renames the root's outputs: that is the added output, nothing else.
    added = _diff(_neuron(), _neuron(extra=True))
    assert [c.kind.value for c in added.differences] == ["output_added"]


def test_neuron_names_that_do_not_restate_the_number_are_compared() -> None:
    renamed = _neuron().replace('neff_input_names="input0"', 'neff_input_names="weights"')
    assert _diff(_neuron(), renamed).verdict == "different"
    outputs = _neuron(outputs="logits")
    assert _diff(_neuron(), outputs).verdict == "different"


def test_entry_order_and_spacing_do_not_matter() -> None:
    base = _neuron().replace(
        'frontend_attributes={neff_input_names="input0"}',
        'frontend_attributes={b="2",a={n = 1 : i32}}',
    )
    reordered = base.replace('{b="2",a={n = 1 : i32}}', '{a={n=1:i32},b="2"}')
    assert _diff(base, reordered).verdict == "identical"
    for text in (base, reordered):
        module = parse_hlo(text)
        fast = canonicalize(module).fingerprint
        assert fast == canonicalize(dataclasses.replace(module, core=None)).fingerprint
    changed = base.replace('b="2"', 'b="3"')
    assert _diff(base, changed).verdict == "different"


# Hand-written: a root tuple's own attributes. Forwarding flattens the tuple into its elements,
# so the outputs' shardings printed on it (JAX's `out_shardings` before Shardy) live nowhere else.
_ROOT = """HloModule m

ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  a = f32[4] add(p0, p1)
  ROOT t = (f32[4], f32[4]) tuple(a, p0)%s
}
"""


@pytest.mark.parametrize(
    ("attribute", "kind"),
    [
        (", sharding={{replicated}, {maximal device=0}}", "sharding"),
        (', frontend_attributes={x="1"}', "attribute"),
        (', metadata={op_name="q"}', None),
    ],
)
def test_root_tuple_attributes(attribute: str, kind: str | None) -> None:
    base, other = parse_hlo(_ROOT % ""), parse_hlo(_ROOT % attribute)
    result = diff_modules(base, other)
    assert [c.kind.value for c in result.differences] == ([kind] if kind else [])
    assert result.verdict == ("different" if kind else "identical")
    for module in (base, other):
        fast = canonicalize(module).fingerprint
        assert fast == canonicalize(dataclasses.replace(module, core=None)).fingerprint


# Hand-written: the forms a backend config is printed in.
_CONFIG = """HloModule m

ENTRY e {
  p0 = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(p0), custom_call_target="kernel"%s
}
"""


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ('{"x":1,"y":{"k":[1,2]}}', '{ "y" : {"k": [1, 2]}, "x": 1 }', True),
        ('"{\\"x\\":1}"', '{"x":1}', True),
        ("{}", "", True),
        ('""', "", True),
        ("{mode = 86 : ui8, uplo = 76 : ui8}", "{mode=86:ui8,uplo=76:ui8}", True),
        ('{"x":1}', '{"x":2}', False),
        ('{"x":[1,2]}', '{"x":[2,1]}', False),
        ('{"x":"a b"}', '{"x":"ab"}', False),
        ('"block=128"', '"block=256"', False),
        ("{x = 1 : i32}", "{x = 2 : i32}", False),
    ],
)
def test_backend_config_forms(a: str, b: str, same: bool) -> None:
    ma, mb = (parse_hlo(_CONFIG % (f", backend_config={v}" if v else "")) for v in (a, b))
    assert (diff_modules(ma, mb).verdict == "identical") is same
    for module in (ma, mb):
        fast = canonicalize(module).fingerprint
        assert fast == canonicalize(dataclasses.replace(module, core=None)).fingerprint


def test_root_tuple_declaring_another_shape_is_different() -> None:
    """Found by fuzzing: jaxlib reads a root tuple whose declared element shape is not its
    operand's; its declaration is part of the program, so that is never `identical`."""
    base = parse_hlo(_ROOT % "")
    other = parse_hlo((_ROOT % "").replace("(f32[4], f32[4]) tuple", "(f32[4], f32[5]) tuple"))
    assert diff_modules(base, other).verdict == "different"
    for module in (base, other):
        fast = canonicalize(module).fingerprint
        assert fast == canonicalize(dataclasses.replace(module, core=None)).fingerprint
