"""The canonical form never calls two different graphs the same.

Real pairs come from fixtures/jax/generate_canonical.py (JAX prints both sides). The small
modules below are hand-written HLO, labelled as such: each isolates one rule (a comparator with
swapped parameters, a reordered tuple, a layout or memory space) that a real producer only shows
together with other changes.
"""

from __future__ import annotations

import json

import pytest

from tests.canonical_reference import layout_of
from tests.conftest import FIXTURES
from xlagraph.canonical import canonicalize
from xlagraph.errors import ParseError
from xlagraph.ir import Module
from xlagraph.parse.hlo import parse_hlo

CANONICAL = FIXTURES / "jax" / "canonical"


def _manifest() -> dict:
    path = CANONICAL / "MANIFEST.json"
    if not path.exists():
        pytest.fail(f"missing {path}: run fixtures/jax/generate_canonical.py")
    return json.loads(path.read_text())["pairs"]


def _fp(text: str) -> str:
    return canonicalize(parse_hlo(text)).fingerprint


def _load(path) -> Module:  # type: ignore[no-untyped-def]
    return parse_hlo(path.read_text(), str(path))


@pytest.mark.parametrize("name", sorted(_manifest()))
def test_real_pair_has_different_fingerprints(name: str) -> None:
    a, b = _load(CANONICAL / name / "a.hlo"), _load(CANONICAL / name / "b.hlo")
    assert _manifest()[name]["verdict"] == "different"
    assert canonicalize(a).fingerprint != canonicalize(b).fingerprint


# The canonical hashes already differ (above); the diff must also name a cause, also for a
# difference confined to a called computation's interface (issue 8 item 3).
@pytest.mark.parametrize("name", sorted(_manifest()))
def test_real_pair_is_different_in_the_diff(name: str) -> None:
    from xlagraph.diff import diff_modules

    a, b = _load(CANONICAL / name / "a.hlo"), _load(CANONICAL / name / "b.hlo")
    assert diff_modules(a, b).verdict == "different"


def test_real_pair_each_side_equals_itself_renamed() -> None:
    for name in _manifest():
        text = (CANONICAL / name / "a.hlo").read_text()
        assert _fp(text) == _fp(text.replace("%", "%zz_").replace("%zz_fused", "%fused"))


# -- hand-written: called computations keep their parameter numbers and output order ------------

SORT = """HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[8] parameter(0)
  ROOT s = f32[8] sort(x), dimensions={0}, to_apply=cmp
}
"""


def test_swapped_comparator_parameters_differ() -> None:
    descending = SORT.replace("compare(a, b)", "compare(b, a)")
    assert _fp(SORT) != _fp(descending)


def test_renumbered_comparator_parameters_differ() -> None:
    renumbered = SORT.replace(
        "parameter(0)\n  b = f32[] parameter(1)", "parameter(1)\n  b = f32[] parameter(0)"
    )
    assert renumbered != SORT
    assert _fp(SORT) != _fp(renumbered)


def test_comparator_printed_in_another_order_is_the_same() -> None:
    reordered = SORT.replace(
        "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n",
        "  b = f32[] parameter(1)\n  a = f32[] parameter(0)\n",
    )
    assert _fp(SORT) == _fp(reordered)


REDUCE_ADD = """HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[8] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=sum
}
"""


def test_commutative_operands_in_another_order_differ() -> None:
    # torch_xla's graph hash keeps operand order: `a + b` vs `b + a` is a second compile.
    assert _fp(REDUCE_ADD) != _fp(REDUCE_ADD.replace("add(a, b)", "add(b, a)"))
    entry = (
        "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  y = f32[4] negate(x)\n"
        "  ROOT r = f32[4] multiply(x, y)\n}\n"
    )
    assert _fp(entry) != _fp(entry.replace("multiply(x, y)", "multiply(y, x)"))


CALL = """HloModule m
pair {
  p = f32[4] parameter(0)
  s = f32[4] sine(p)
  c = f32[4] cosine(p)
  ROOT t = (f32[4], f32[4]) tuple(s, c)
}
ENTRY e {
  x = f32[4] parameter(0)
  k = (f32[4], f32[4]) call(x), to_apply=pair
  g0 = f32[4] get-tuple-element(k), index=0
  g1 = f32[4] get-tuple-element(k), index=1
  ROOT r = f32[4] subtract(g0, g1)
}
"""


def test_called_tuple_in_another_order_differs() -> None:
    assert _fp(CALL) != _fp(CALL.replace("tuple(s, c)", "tuple(c, s)"))


def test_called_tuple_nesting_differs() -> None:
    flat = CALL.replace("pair {", "pair {").replace(
        "ROOT r = f32[4] subtract(g0, g1)", "ROOT r = (f32[4], f32[4]) tuple(g0, g1)"
    )
    nested = flat.replace(
        "ROOT r = (f32[4], f32[4]) tuple(g0, g1)",
        "i = (f32[4]) tuple(g1)\n  ROOT r = (f32[4], (f32[4])) tuple(g0, i)",
    )
    assert _fp(flat) != _fp(nested)


def test_entry_parameter_and_output_order_stay_canonical() -> None:
    a = """HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  s = f32[4] subtract(x, y)
  n = f32[4] negate(y)
  ROOT t = (f32[4], f32[4]) tuple(s, n)
}
"""
    b = """HloModule m
ENTRY e {
  y = f32[4] parameter(0)
  x = f32[4] parameter(1)
  s = f32[4] subtract(x, y)
  n = f32[4] negate(y)
  ROOT t = (f32[4], f32[4]) tuple(n, s)
}
"""
    assert _fp(a) == _fp(b)
    assert canonicalize(parse_hlo(a)).order != canonicalize(parse_hlo(b)).order


# -- constants ---------------------------------------------------------------------------------

BIG = """HloModule m
ENTRY e {
  x = f32[12] parameter(0)
  c = f32[12] constant({VALUES})
  ROOT r = f32[12] add(x, c)
}
"""


def test_large_constant_compares_by_value() -> None:
    values = list(range(12))
    a = BIG.replace("VALUES", ", ".join(map(str, values)))
    b = BIG.replace("VALUES", ", ".join(map(str, [*values[:-1], 99])))
    assert _fp(a) != _fp(b)
    assert _fp(a) == _fp(a.replace(", ", ","))  # printing whitespace is not a value


def test_huge_constant_is_digested_not_kept() -> None:
    from tests.oracles.hashes_reference import content_key

    text = BIG.replace("12", "5000").replace("VALUES", ", ".join(["1.5"] * 5000))
    module = parse_hlo(text)
    key = content_key(module.entry.by_name["c"], {})
    assert len(key) < 200
    assert _fp(text) != _fp(text.replace("1.5}", "2.5}"))


def test_elided_constants_compare_by_shape() -> None:
    elided = BIG.replace("{VALUES}", "{...}")
    assert _fp(elided) == _fp(elided.replace("c = f32", "cc = f32").replace("(x, c)", "(x, cc)"))
    assert _fp(elided) != _fp(BIG.replace("VALUES", ", ".join(["0"] * 12)))


# -- layouts ---------------------------------------------------------------------------------

LAYOUT = """HloModule m
ENTRY e {
  x = f32[4,8]{1,0} parameter(0)
  ROOT r = f32[4,8]{1,0} negate(x)
}
"""


@pytest.mark.parametrize(
    ("shape", "layout"),
    [
        ("f32[4,8]{1,0}", ""),
        ("f32[4,8]", ""),
        ("f32[]", ""),
        ("f32[4,8]{0,1}", "{0,1}"),
        ("f32[4]{0:S(1)}", "{0:S(1)}"),
        ("f32[8,128]{1,0:T(8,128)}", "{1,0:T(8,128)}"),
        ("(f32[4]{0}, s32[2,3]{0,1})", ";{0,1}"),
        ("(f32[4]{0}, /*index=1*/s32[2,3]{1,0})", ""),
    ],
)
def test_layout_of(shape: str, layout: str) -> None:
    assert layout_of(shape) == layout


def test_default_layout_printed_or_not_is_the_same() -> None:
    assert _fp(LAYOUT) == _fp(LAYOUT.replace("{1,0}", ""))


@pytest.mark.parametrize("other", ["{0,1}", "{1,0:S(1)}"])
def test_layout_or_memory_space_differs(other: str) -> None:
    changed = LAYOUT.replace("ROOT r = f32[4,8]{1,0}", f"ROOT r = f32[4,8]{other}")
    left, right = canonicalize(parse_hlo(LAYOUT)), canonicalize(parse_hlo(changed))
    assert left.fingerprint != right.fingerprint
    lc, rc = left.entry, right.entry
    layouts = [(n, lc.layouts.get(n, ""), rc.layouts.get(n, "")) for n in lc.order]
    assert [x for x in layouts if x[1] != x[2]] == [("r", "", other)]  # "": XLA's default layout
    # Matching is unaffected: the structural hashes ignore layout.
    assert lc.h1["r"] == rc.h1["r"]


def test_layout_in_a_called_computation_differs() -> None:
    text = """HloModule m
f {
  p = f32[4,8]{1,0} parameter(0)
  ROOT n = f32[4,8]{1,0} negate(p)
}
ENTRY e {
  x = f32[4,8]{1,0} parameter(0)
  ROOT r = f32[4,8]{1,0} fusion(x), kind=kLoop, calls=f
}
"""
    assert _fp(text) != _fp(text.replace("ROOT n = f32[4,8]{1,0}", "ROOT n = f32[4,8]{0,1}"))


HEADED = """HloModule m, entry_computation_layout={(f32[4,8]{1,0}, f32[])->f32[4,8]{1,0}}
ENTRY e {
  x = f32[4,8]{1,0} parameter(0)
  s = f32[] parameter(1)
  b = f32[4,8]{1,0} broadcast(s), dimensions={}
  ROOT r = f32[4,8]{1,0} multiply(x, b)
}
"""


def test_header_input_layout_alone_is_another_program() -> None:
    """XLA compiles for the header's declared entry layout even when the parameters print another
    (jaxlib reads both): a change there alone must never be `identical`."""
    from xlagraph.diff import diff_modules

    other = HEADED.replace("{(f32[4,8]{1,0},", "{(f32[4,8]{0,1},", 1)
    result = diff_modules(parse_hlo(HEADED), parse_hlo(other))
    assert result.verdict == "different"
    assert [str(c.kind) for c in result.causes] == ["layout"]
    assert "input layouts" in result.causes[0].summary


def test_header_layouts_printed_or_defaulted_are_the_same() -> None:
    from xlagraph.diff import diff_modules

    bare = HEADED.replace("{(f32[4,8]{1,0},", "{(f32[4,8],", 1)
    assert diff_modules(parse_hlo(HEADED), parse_hlo(bare)).verdict == "identical"
    # Output layouts alone: torch_xla's IrToHlo print and its compiled module may disagree there.
    outputs = HEADED.replace("->f32[4,8]{1,0}}", "->f32[4,8]{0,1}}", 1)
    assert diff_modules(parse_hlo(HEADED), parse_hlo(outputs)).verdict == "identical"


# -- cycles and depth --------------------------------------------------------------------------


def test_operand_cycle_is_refused_not_looped() -> None:
    text = """HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  a = f32[4] add(p, b)
  b = f32[4] negate(a)
  ROOT r = f32[4] negate(b)
}
"""
    try:
        module = parse_hlo(text, "cycle.hlo")
    except ParseError:
        return  # the reader refuses it already
    with pytest.raises(ParseError, match="operand cycle"):
        canonicalize(module)


def test_long_chain_needs_no_recursion() -> None:
    n = 20_000
    lines = ["HloModule m", "ENTRY e {", "  v0 = f32[4] parameter(0)"]
    lines += [f"  v{k} = f32[4] negate(v{k - 1})" for k in range(1, n)]
    lines += [f"  ROOT r = f32[4] negate(v{n - 1})", "}"]
    canon = canonicalize(parse_hlo("\n".join(lines) + "\n"))
    assert len(canon.entry.order) == n + 1
