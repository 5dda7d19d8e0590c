"""GraphML export: `xlagraph graphs SRC --graphml OUT` (one graph) and `xlagraph diff A B --graphml
OUT` (both graphs, the differing instructions marked), read back with networkx as a viewer would."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner, Result
from xlagraph.cli.main import xlagraph as cli

import xlagraph
from tests.conftest import FIXTURES

PAIR = FIXTURES / "torch_xla" / "ragged_batch"
A, B = str(PAIR / "a.hlo"), str(PAIR / "b.hlo")
SAVE = str(FIXTURES / "torch_xla" / "kept_alive" / "save_hlo.txt")
CALLS = str(FIXTURES / "torch_xla" / "fsdp_bucket" / "a.hlo")


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("spec", [CALLS, f"{SAVE}#2"])
def test_graphs_graphml_holds_every_instruction_and_operand_use(spec: str, tmp_path: Path) -> None:
    out = tmp_path / "g.graphml"
    result = run("graphs", spec, "--graphml", str(out))
    assert result.exit_code == 0 and result.stdout == f"wrote {out}\n"
    g = nx.read_graphml(out, force_multigraph=True)
    m = xlagraph.load(spec)
    assert g.number_of_nodes() == m.instruction_count
    assert g.number_of_edges() == sum(len(i.operands) + len(i.calls) for i in m.instructions())
    assert nx.is_directed_acyclic_graph(g)
    root = m.entry.root
    assert g.nodes[root.id]["opcode"] == root.opcode and g.nodes[root.id]["root"] is True
    keys = [k for _, _, k in g.edges(keys=True)]  # read_graphml keys edges by their GraphML id
    assert len(set(keys)) == len(keys), "every edge has an id of its own"


def test_diff_graphml_marks_the_differing_instructions(tmp_path: Path) -> None:
    out = tmp_path / "d.graphml"
    result = run("diff", A, B, "--graphml", str(out))
    assert result.exit_code == 1 and result.stdout == f"wrote {out}\n"
    g = nx.read_graphml(out, force_multigraph=True)
    d = xlagraph.diff(A, B)
    sides = Counter(a["side"] for _, a in g.nodes(data=True))
    assert sides == {"A": d.left.instruction_count, "B": d.right.instruction_count}
    status = {n: a["status"] for n, a in g.nodes(data=True)}
    for side in ("A", "B"):
        assert {f"{side}:{n}" for n in d.changed_ids(side)} == {
            n for n, s in status.items() if s == "cause" and n.startswith(side)
        }
    assert "changed" in status.values()  # the new batch size reaches every shape downstream
    for n, a in g.nodes(data=True):  # counterparts point at each other
        if a["counterpart"]:
            assert g.nodes[a["counterpart"]]["counterpart"] == n
    assert all(u[0] == v[0] for u, v in g.edges())  # no edge crosses sides


def test_identical_diff_marks_nothing(tmp_path: Path) -> None:
    same = FIXTURES / "torch_xla" / "reordered_statements"
    out = tmp_path / "same.graphml"
    result = run("diff", str(same / "a.hlo"), str(same / "b.hlo"), "--graphml", str(out))
    assert result.exit_code == 0
    g = nx.read_graphml(out, force_multigraph=True)
    assert {a["status"] for _, a in g.nodes(data=True)} == {"same"}


def test_graphml_needs_one_graph_and_no_json(tmp_path: Path) -> None:
    out = tmp_path / "x.graphml"
    result = run("graphs", SAVE, "--graphml", str(out))
    assert result.exit_code == 2 and "holds 3 graphs" in result.stderr and not out.exists()
    result = run("graphs", A, "--graphml", str(out), "--json")
    assert result.exit_code == 2 and "--json" in result.stderr
    result = run("graphs", A, "--graphml", str(tmp_path / "no" / "dir.graphml"))
    assert result.exit_code == 2 and "cannot write" in result.stderr
