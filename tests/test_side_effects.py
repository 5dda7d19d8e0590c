"""Instructions with a side effect run whether or not a result reads them (XLA never removes them
as dead code), so two modules that differ only there are never `identical`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from xlagraph.diff import diff_files

STAGE = FIXTURES / "torch_xla" / "parallel" / "pp_last_stage_a.hlo"


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_send_of_another_value_is_a_difference(tmp_path: Path) -> None:
    # The real last pipeline stage (torch_xla 2.9) sends its input's gradient back, and also
    # returns it; B sends another tensor while returning the same one.
    text = STAGE.read_text()
    sent = "send(f32[2,16,64]{2,1,0} %add.570,"
    assert sent in text
    b = _write(tmp_path, "b.hlo", text.replace(sent, "send(f32[2,16,64]{2,1,0} %multiply.569,"))
    result = diff_files(str(STAGE), b)
    assert result.verdict == "different"
    assert any("side effect" in c.summary and "send" in c.summary for c in result.causes)


def test_the_same_send_with_another_channel_number_is_identical(tmp_path: Path) -> None:
    # channel ids are identifiers, as elsewhere in the canonical form
    b = _write(tmp_path, "b.hlo", STAGE.read_text().replace("channel_id=2", "channel_id=9"))
    result = diff_files(str(STAGE), b)
    assert result.verdict == "identical" and not result.causes


# Hand-written (parser edge cases of the same rule): an outfeed and a custom-call with a side
# effect whose results nothing reads.
_EFFECT = """HloModule m

ENTRY main {
  p0 = f32[4] parameter(0)
  tok = token[] after-all()
  e = f32[4] exponential(p0)
  l = f32[4] log(p0)
  {effect}
  ROOT n = f32[4] negate(p0)
}
"""


@pytest.mark.parametrize(
    "a, b",
    [
        (
            "out = token[] outfeed(e, tok), outfeed_shape=f32[4]",
            "out = token[] outfeed(l, tok), outfeed_shape=f32[4]",
        ),
        (
            'cc = f32[4] custom-call(e), custom_call_target="log_it", custom_call_has_side_effect=true',
            'cc = f32[4] custom-call(l), custom_call_target="log_it", custom_call_has_side_effect=true',
        ),
    ],
)
def test_unread_side_effects_are_compared(tmp_path: Path, a: str, b: str) -> None:
    pa = _write(tmp_path, "a.hlo", _EFFECT.replace("{effect}", a))
    pb = _write(tmp_path, "b.hlo", _EFFECT.replace("{effect}", b))
    assert diff_files(pa, pb).verdict == "different"
    assert diff_files(pa, pa).verdict == "identical"


def test_an_unread_pure_custom_call_stays_dead_code(tmp_path: Path) -> None:
    a = 'cc = f32[4] custom-call(e), custom_call_target="f"'
    b = 'cc = f32[4] custom-call(l), custom_call_target="f"'
    pa = _write(tmp_path, "a.hlo", _EFFECT.replace("{effect}", a))
    pb = _write(tmp_path, "b.hlo", _EFFECT.replace("{effect}", b))
    result = diff_files(pa, pb)
    assert "side effect" not in " ".join(c.summary for c in result.causes)


def _fingerprints(path: str) -> tuple[str, str]:
    """(compiled core, Python) fingerprints of a module's canonical form."""
    import dataclasses

    from xlagraph.canonical import canonicalize
    from xlagraph.parse.hlo import parse_hlo

    module = parse_hlo(Path(path).read_text())
    assert module.core is not None
    fast = canonicalize(module).fingerprint
    return fast, canonicalize(dataclasses.replace(module, core=None)).fingerprint


def test_graphs_fingerprint_counts_unread_side_effects(tmp_path: Path) -> None:
    """`xlagraph graphs` groups modules by fingerprint: a send of another value is another graph
    there too, in both implementations; a renumbered channel is not."""
    from click.testing import CliRunner
    from xlagraph.cli.main import xlagraph

    text = STAGE.read_text()
    dump = tmp_path / "dump"
    dump.mkdir()
    base = _write(dump, "module_0001.stage.before_optimizations.txt", text)
    other = _write(
        dump, "module_0002.stage.before_optimizations.txt", text.replace("%add.570,", "%multiply.569,", 1)
    )
    channel = _write(
        dump, "module_0003.stage.before_optimizations.txt", text.replace("channel_id=2", "channel_id=9")
    )
    fa, fb, fc = (_fingerprints(p) for p in (base, other, channel))
    assert fa[0] == fa[1] and fb[0] == fb[1] and fc[0] == fc[1]
    assert fa[0] != fb[0] and fa[0] == fc[0]
    out = CliRunner().invoke(xlagraph, ["graphs", str(dump)]).output
    assert fa[0][:16] in out and fb[0][:16] in out, out


def test_a_renamed_reduction_under_an_unread_all_reduce_start_is_identical(tmp_path: Path) -> None:
    # Hand-written: computation names are identifiers; the reduction they name is compared.
    text = """HloModule m

{name} {{
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] {op}(x, y)
}}

ENTRY main {{
  p0 = f32[4] parameter(0)
  ars = f32[4] all-reduce-start(p0), replica_groups={{}}, to_apply={name}
  ROOT n = f32[4] negate(p0)
}}
"""
    a = _write(tmp_path, "a.hlo", text.format(name="add.1", op="add"))
    b = _write(tmp_path, "b.hlo", text.format(name="sum.7", op="add"))
    c = _write(tmp_path, "c.hlo", text.format(name="add.1", op="maximum"))
    assert diff_files(a, b).verdict == "identical"
    assert diff_files(a, c).verdict == "different"
    assert _fingerprints(a)[0] == _fingerprints(b)[0] != _fingerprints(c)[0]
