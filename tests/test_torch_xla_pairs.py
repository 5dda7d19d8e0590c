"""Every real torch_xla 2.9 scenario (fixtures/torch_xla, produced by its generate.py) gives the
verdict and exactly the causes its manifest names, citing the user's script where the dumps'
metadata has user frames."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, load_manifest
from xlagraph.diff import diff_files
from xlagraph.parse.sources import open_source

SCENARIOS = {s["name"]: s for s in load_manifest("torch_xla")["scenarios"]}
# The graphs of these two carry only library frames in their metadata (FSDP's collectives are
# built inside torch_xla; the .item() graph is the optimizer's update), so no user line to cite.
NO_USER_FRAMES = {"fsdp_bucket", "item_mid_step"}


def _verdict(expected: str) -> str:
    return "identical" if expected.startswith(("identical", "same_graph_hash")) else expected


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_pair(name: str) -> None:
    scenario = SCENARIOS[name]
    pair = scenario["pair"]
    result = diff_files(
        str(FIXTURES / "torch_xla" / pair["a_file"]), str(FIXTURES / "torch_xla" / pair["b_file"])
    )
    assert result.verdict == _verdict(scenario["expected_verdict"])
    expected = sorted(set(scenario["expected_causes"]))
    assert sorted(c.kind.value for c in result.differences) == expected
    if result.differences and name not in NO_USER_FRAMES:
        script_names = {s.rsplit("/", 1)[-1] for s in scenario["scripts"]}
        cited = {src.rsplit("/", 1)[-1].rsplit(":", 1)[0] for c in result.differences for src in c.sources}
        assert cited & script_names, f"no line of {script_names} cited: {cited}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("form", ["save_hlo.txt", "save_text.txt", "xla_dump"])
def test_every_dump_form_reads(name: str, form: str) -> None:
    path = FIXTURES / "torch_xla" / name / form
    if name == "fsdp_bucket":
        path = next((FIXTURES / "torch_xla" / name).glob(f"*/{form}"))
    source = open_source(str(path))
    assert source.graphs
    from xlagraph.parse.sources import read

    for graph in source.graphs:
        module = read(graph)
        assert module.instruction_count > 0
    if form.startswith("save"):
        assert all(g.info.graph_hash for g in source.graphs)
        assert all(g.info.frames for g in source.graphs)


def test_save_file_blocks_of_one_graph_hash_share_a_fingerprint() -> None:
    from xlagraph.graphs import list_graphs

    listing = list_graphs(str(FIXTURES / "torch_xla" / "clean_loop" / "save_hlo.txt"))
    hashes = {row.graph_hash for row in listing.rows}
    assert len(hashes) == 1
    assert len({row.fingerprint for row in listing.rows}) == 1


def test_lazy_ir_slice_change_is_named_from_root_hashes() -> None:
    """The text format prints no slice bounds: the diff says the graphs differ and why it cannot
    show the value, instead of calling them identical."""
    scenario = SCENARIOS["slice_int"]
    a, b = scenario["pair"]["a"]["block"], scenario["pair"]["b"]["block"]
    path = FIXTURES / "torch_xla" / "slice_int" / "save_text.txt"
    result = diff_files(f"{path}#{a}", f"{path}#{b}")
    assert result.verdict == "different"
    assert any("XLA_SAVE_TENSORS_FMT=hlo" in c.summary for c in result.differences)
