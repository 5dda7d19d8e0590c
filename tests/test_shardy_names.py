"""A Shardy sharding change is said in the names its modules wrote (issue 37), end to end.

The canonical form compares mesh and axis names as bound names (rust/src/canon/shardy.rs:
`@mesh<[2,2]>`, `\\"#0\\"`); every view says each side's shardings as its module wrote them
(xlagraph/canonical/written.py), a mesh that changed written out in place. Real JAX pairs of
fixtures/jax, read through the CLI (text, --json, --html, --graphml).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from click.testing import CliRunner
from xlagraph.cli.main import xlagraph

WILD = Path("fixtures/jax/wild")
SHARD_MAP = Path("fixtures/jax/wild2/shard_map_one_vs_both_axes")
# What only the canonical form spells: an axis by its place, a mesh by its sizes or devices.
CANONICAL = re.compile(r'\\"#\d+\\"|@mesh<\[?\d')


def _cli(*args: str) -> str:
    result = CliRunner().invoke(xlagraph, list(args))
    assert result.exit_code == 1, result.output  # different
    return result.output


def _changes(out: str) -> list[tuple[str, str]]:
    doc, _ = json.JSONDecoder().raw_decode(out)  # (then what --html and --graphml wrote)
    return [(ch["old"], ch["new"]) for c in doc["causes"] for ch in c["changes"]]


def test_text_and_json_say_the_modules_axis_names() -> None:
    a, b = str(SHARD_MAP / "a.hlo"), str(SHARD_MAP / "b.hlo")
    text = " ".join(_cli("diff", a, b).split())  # (lines wrapped)
    assert not CANONICAL.search(text), text
    assert r'<@mesh, [{\"a\"}, {}]>' in text and r'<@mesh, [{\"a\", \"b\"}, {}]>' in text
    head = r'{xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{}, {}]>, '
    old, new = head + r'<@mesh, [{\"a\"}, {}]>]>",', head + r'<@mesh, [{\"a\", \"b\"}, {}]>]>",'
    manual = r'xla.sdy.manual_axes="#sdy<manual_axes{\"a\", \"b\"}>"}'
    assert _changes(_cli("diff", a, b, "--json")) == [(old + manual, new + manual)]
    assert _changes(_cli("diff", b, a, "--json")) == [(new + manual, old + manual)]


def test_a_changed_mesh_is_written_out_on_each_side() -> None:
    """2x2 vs 4x1 with the same specs: the same written names on both sides would read as no
    change, so each side's mesh is written out with its sizes."""
    d = WILD / "mesh_2x2_vs_4x1"
    spec = r', [{\"a\"}, {\"b\"}]>"}'
    out = _cli("diff", str(d / "a.hlo"), str(d / "b.hlo"), "--json")
    frontend = [ch for ch in _changes(out) if "sdy" in ch[0]]
    assert frontend == [
        (
            r'{xla.sdy.sharding="#sdy.sharding<@mesh<[\"a\"=2, \"b\"=2]>' + spec,
            r'{xla.sdy.sharding="#sdy.sharding<@mesh<[\"a\"=4, \"b\"=1]>' + spec,
        )
    ]


def _renamed(text: str) -> str:
    """Mesh `mesh` -> `grid`, axes `a` -> `rows`, `b` -> `cols`, everywhere."""
    for old, new in (("a", "rows"), ("b", "cols")):
        text = text.replace(f'"{old}"', f'"{new}"').replace(f'\\"{old}\\"', f'\\"{new}\\"')
    return text.replace("mesh = #sdy", "grid = #sdy").replace("@mesh", "@grid")


def test_renamed_and_changed_each_side_in_its_own_names(tmp_path: Path) -> None:
    """B renamed its mesh and axes and moved a sharding: A's change text in A's names, B's in
    B's, each mesh written out (the other module has no mesh of that name); renamed alone,
    identical. The page and the GraphML show each side's instructions in their names too."""
    d = WILD / "named_sharding_input"
    a = str(d / "a.hlo")
    b = tmp_path / "b.hlo"
    b.write_text(_renamed((d / "b.hlo").read_text()))
    same = tmp_path / "a_renamed.hlo"
    same.write_text(_renamed((d / "a.hlo").read_text()))
    assert CliRunner().invoke(xlagraph, ["diff", a, str(same)]).exit_code == 0
    page, graphml = tmp_path / "d.html", tmp_path / "d.graphml"
    out = _cli("diff", a, str(b), "--json", "--html", str(page), "--graphml", str(graphml))
    frontend = [ch for ch in _changes(out) if "sdy" in ch[0]]
    assert frontend == [
        (
            r'{xla.sdy.sharding="#sdy.sharding<@mesh<[\"a\"=2, \"b\"=2]>, [{\"a\"}, {}]>"}',
            r'{xla.sdy.sharding="#sdy.sharding<@grid<[\"rows\"=2, \"cols\"=2]>, [{}, {\"rows\"}]>"}',
        )
    ]
    shown = html.unescape(page.read_text())
    assert not CANONICAL.search(shown)
    assert r'<@mesh, [{}, {}]>' in shown and r'<@grid, [{}, {}]>' in shown  # w.1, as each side wrote it
    nodes = html.unescape(graphml.read_text())
    assert not CANONICAL.search(nodes)
    assert r'<@mesh, [{\"a\"}, {}]>' in nodes and r'<@grid, [{}, {\"rows\"}]>' in nodes
