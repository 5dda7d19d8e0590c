"""Buffer donation (the header's `input_output_alias` / `buffer_donor`) is compiled in, so graphs
that differ only there are never `identical`; renumbered inputs and outputs carry it along."""

from __future__ import annotations

from tests.conftest import FIXTURES
from xlagraph.diff import diff_files, diff_modules
from xlagraph.parse.hlo import parse_hlo

PAIR = FIXTURES / "jax" / "annotations" / "donate"


def test_donate_argnums_is_a_donation_change() -> None:
    """Real JAX: the same step without and with `donate_argnums=(0,)`."""
    result = diff_files(str(PAIR / "a.hlo"), str(PAIR / "b.hlo"))
    assert result.verdict == "different"
    (cause,) = result.differences
    assert cause.kind.value == "attribute"
    assert "input 0 -> output 0" in cause.summary and "donate" in cause.hint
    assert diff_files(str(PAIR / "b.hlo"), str(PAIR / "b.hlo")).verdict == "identical"


# Hand-written: the same aliasing with the inputs and outputs numbered the other way round.
_MODULE = """HloModule m{header}

ENTRY e {{
  p{w} = f32[4] parameter({w})
  p{g} = f32[8] parameter({g})
  n = f32[4] negate(p{w})
  s = f32[8] sine(p{g})
  ROOT t = (f32[{first}], f32[{second}]) tuple({outs})
}}
"""


def _module(swapped: bool, alias: str) -> str:
    w, g = (1, 0) if swapped else (0, 1)
    outs, first, second = ("s, n", 8, 4) if swapped else ("n, s", 4, 8)
    header = f", input_output_alias={{ {alias} }}" if alias else ""
    return _MODULE.format(header=header, w=w, g=g, outs=outs, first=first, second=second)


def test_donation_follows_renumbering() -> None:
    a = parse_hlo(_module(False, "{0}: (0, {}, may-alias)"))
    same = parse_hlo(_module(True, "{1}: (1, {}, may-alias)"))
    other = parse_hlo(_module(False, "{1}: (1, {}, may-alias)"))
    kinds = [c.kind.value for c in diff_modules(a, same).differences]
    assert "attribute" not in kinds and kinds  # only the permutation
    assert [c.kind.value for c in diff_modules(a, other).differences] == ["attribute"]
    # With another difference, donation follows it (other tensors updated in place): no cause.
    moved = parse_hlo(_module(True, "{0}: (0, {}, may-alias)"))
    assert "attribute" not in [c.kind.value for c in diff_modules(a, moved).differences]
    donor = parse_hlo(_module(False, "").replace("HloModule m", "HloModule m, buffer_donor={ (0, {}) }"))
    assert diff_modules(parse_hlo(_module(False, "")), donor).verdict == "different"
