"""`match.multiply_by_one`: multiplies by an exact one are read as what they multiply when inputs and
outputs are paired, so the terms of a sum written in the other order (torch_xla's `a + b * 1`)
keep their context. The modules here are hand-written (parser-level edge cases, labelled as
such); the real case is `fixtures/torch_xla/fixes/parameter_permutation.plain@sum_terms`, run by
tests/test_fixes_work.py."""

from __future__ import annotations

from xlagraph.canonical import canonicalize
from xlagraph.diff import diff_modules
from xlagraph.match.correspondence import correspond
from xlagraph.match.multiply_by_one import identity_multiplies
from xlagraph.parse.hlo import parse_hlo

# Hand-written: an L2 penalty over w f32[4,3] and b f32[4], summed as torch_xla lowers `x + y`
# (`x + y * 1`), in one order (w first) or the other, and both inputs read elsewhere too.
_SUM = """HloModule m

add_f32 {{
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}}

ENTRY main {{
  p0 = f32[{n0}]{{{l0}}} parameter(0)
  p1 = f32[{n1}]{{{l1}}} parameter(1)
  z = f32[] constant(0)
  one = f32[] constant({one})
  s0 = f32[] reduce(p0, z), dimensions={{{d0}}}, to_apply=add_f32
  s1 = f32[] reduce(p1, z), dimensions={{{d1}}}, to_apply=add_f32
  m = f32[] multiply(s1, one)
  total = f32[] add(s0, m)
  w2 = f32[4,3]{{1,0}} add({w}, {w})
  b2 = f32[4]{{0}} negate({b})
  ROOT t = (f32[], f32[4,3]{{1,0}}, f32[4]{{0}}) tuple(total, w2, b2)
}}
"""


def _text(first: str, one: str = "1") -> str:
    w = dict(n="4,3", l="1,0", d="0,1")
    b = dict(n="4", l="0", d="0")
    a0, a1 = (w, b) if first == "w" else (b, w)
    return _SUM.format(
        n0=a0["n"],
        l0=a0["l"],
        d0=a0["d"],
        n1=a1["n"],
        l1=a1["l"],
        d1=a1["d"],
        one=one,
        w="p0" if first == "w" else "p1",
        b="p1" if first == "w" else "p0",
    )


def _module(first: str, one: str = "1"):  # type: ignore[no-untyped-def]
    return canonicalize(parse_hlo(_text(first, one), "hand-written.hlo"))


def test_a_multiply_by_one_is_seen_through_and_others_are_not() -> None:
    for one, seen in (("1", True), ("1.0", True), ("2", False), ("-1", False), ("0", False)):
        found = identity_multiplies(_module("w", one).entry).by_name
        assert (found == {"m": "s1"}) is seen, (one, found)


def test_positions_name_the_same_instructions() -> None:
    entry = _module("w").entry
    found = identity_multiplies(entry)
    names = [i.name for i in entry.computation.instructions]
    assert [(names[a], names[b]) for a, b in found.by_index] == list(found.by_name.items())


def test_an_output_multiply_keeps_its_node() -> None:
    text = """HloModule m2

ENTRY main {
  x = f32[4]{0} parameter(0)
  one = f32[] constant(1)
  ones = f32[4]{0} broadcast(one), dimensions={}
  ROOT y = f32[4]{0} multiply(x, ones)
}
"""
    assert not identity_multiplies(canonicalize(parse_hlo(text, "hand-written.hlo")).entry).by_name


def test_terms_summed_in_the_other_order_pair_their_inputs_by_context() -> None:
    left, right = _module("w"), _module("b")
    found = correspond(left.entry, right.entry)
    assert dict(found.params) == {"p0": "p1", "p1": "p0"}
    raw = (parse_hlo(_text("w"), "a.hlo"), parse_hlo(_text("b"), "b.hlo"))
    kinds = {c.kind.value for c in diff_modules(*raw).causes}
    assert "parameter_permutation" in kinds, kinds
    assert "attribute" not in kinds, kinds


def test_the_core_finds_what_the_python_rule_finds() -> None:
    """On the handle (rust/src/matching/multiply_by_one.rs) and in Python: the same multiplies, targets and
    order, on every computation of the fixture pairs the tests diff and of the hand-written
    modules here."""
    from pathlib import Path

    from tests.oracles.multiply_by_one_reference import identity_multiplies_reference
    from xlagraph.parse.sources import load_module

    root = Path(__file__).resolve().parent.parent
    lines = (root / "tests" / "data" / "fixture_pairs.txt").read_text(encoding="utf-8").splitlines()
    specs = {s for line in lines if line and not line.startswith("#") for s in line.split("\t")}
    modules = [load_module(str(root / s)) for s in sorted(specs)]  # (`path#K` names a graph of a dump)
    modules += [parse_hlo(_text(first, one), "hand-written.hlo") for first in "wb" for one in ("1", "2")]
    modules.append(parse_hlo(_CHAIN, "hand-written.hlo"))
    compared = found = 0
    for module in modules:
        for comp in canonicalize(module).computations.values():
            got = identity_multiplies(comp)
            want = identity_multiplies_reference(comp)
            assert list(got.by_name.items()) == list(want.by_name.items())
            assert got.by_index == want.by_index
            compared += 1
            found += len(want.by_name)
    assert compared > 100 and found > 10


# Hand-written: chains of multiplies by one (a broadcast one, either operand), one of them an
# output, and a multiply of two ones.
_CHAIN = """HloModule chain

ENTRY main {
  x = f32[4]{0} parameter(0)
  one = f32[] constant(1.0)
  ones = f32[4]{0} broadcast(one), dimensions={}
  a = f32[4]{0} multiply(x, ones)
  b = f32[4]{0} multiply(ones, a)
  c = f32[4]{0} multiply(b, ones)
  d = f32[4]{0} multiply(ones, ones)
  e = f32[4]{0} add(c, d)
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(e, b)
}
"""
