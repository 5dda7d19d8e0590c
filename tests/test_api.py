"""The Python API (`xlagraph.load`, `diff`, `report`, `check`, `graphs`): what it returns, that the
CLI prints exactly what it computes, that its graphs round-trip through networkx, that bad input
is `xlagraph.InputError`, and that its docstring examples run (they are the docs' examples).
"""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner
from xlagraph.cli.main import xlagraph as cli

import xlagraph
from tests.conftest import FIXTURES, ROOT

PAIR = FIXTURES / "torch_xla" / "ragged_batch"
A, B = str(PAIR / "a.hlo"), str(PAIR / "b.hlo")
SAVE = str(FIXTURES / "torch_xla" / "kept_alive" / "save_hlo.txt")
CAPTURE = str(FIXTURES / "torch_xla" / "two_runs" / "capture")
CALLS = str(FIXTURES / "torch_xla" / "fsdp_bucket" / "a.hlo")  # 8 computations: reducers, calls
API_MODULES = ("xlagraph.api", "xlagraph.api._module", "xlagraph.api._diff", "xlagraph.api._report",
               "xlagraph.api._ranks", "xlagraph.render.notebook")  # fmt: skip


def cli_out(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code in (0, 1), (result.exit_code, result.output, result.exception)
    return result.stdout


# --- load -------------------------------------------------------------------------------------------


def test_load_gives_computations_instructions_and_identity() -> None:
    m = xlagraph.load(CALLS)
    assert m.format == "hlo" and m.label == CALLS and len(m.computations) == 8
    assert m.entry.is_entry and m.entry is m.computations[-1]
    assert sum(len(c.instructions) for c in m.computations) == m.instruction_count == 310
    assert m.fingerprint == xlagraph.graphs(CALLS).rows[0].fingerprint
    reducers = [i for i in m.instructions() if i.calls]
    assert reducers and all(m.computation(c) for i in reducers for c in i.calls)
    dot = next(i for i in m.entry.instructions if i.opcode == "dot")
    assert dot.attribute("lhs_contracting_dims") and dot.source.endswith(tuple("0123456789"))
    assert dot.operands and all(o in m.entry.by_name for o in dot.operands)


def test_load_all_reads_every_graph_of_a_save_file_once_per_text() -> None:
    modules = xlagraph.load_all(SAVE)
    assert [m.label for m in modules] == [f"{SAVE}#{k}" for k in range(3)]
    assert all(m.graph_hash for m in modules)
    assert [m.fingerprint for m in modules] == [r.fingerprint for r in xlagraph.graphs(SAVE).rows]


@pytest.mark.parametrize(
    "spec", [CALLS, A, f"{SAVE}#1", str(FIXTURES / "torch_xla" / "kept_alive" / "save_text.txt#1")]
)
def test_networkx_graph_round_trips(spec: str) -> None:
    m = xlagraph.load(spec)
    g = m.to_networkx()
    operand_uses = sum(len(i.operands) for i in m.instructions())
    calls = sum(len(i.calls) for i in m.instructions())
    assert g.number_of_nodes() == m.instruction_count
    assert g.number_of_edges() == operand_uses + calls
    assert nx.is_directed_acyclic_graph(g)
    order = {n: k for k, n in enumerate(nx.topological_sort(g))}
    assert all(order[u] < order[v] for u, v in g.edges())
    for i in m.instructions():  # every operand use is an edge with its index, repeated operands too
        uses = [(d["operand"], u) for u, _, d in g.in_edges(i.id, data=True) if d["kind"] == "operand"]
        assert sorted(uses) == [(k, xlagraph.api.node_id(i.computation, o)) for k, o in enumerate(i.operands)]
        assert g.nodes[i.id]["opcode"] == i.opcode and g.nodes[i.id]["shape"] == i.shape
    for u, _, d in g.edges(data=True):
        if d["kind"] == "call":
            assert g.nodes[u]["root"] and g.nodes[u]["computation"] == d["computation"]
    entry = m.entry.to_networkx()
    assert entry.number_of_nodes() == len(m.entry)
    assert entry.number_of_edges() == sum(len(i.operands) for i in m.entry.instructions)


def test_load_refuses_bad_input_with_input_error_naming_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] frobnicate(p)\n}\n")
    with pytest.raises(xlagraph.InputError) as e:
        xlagraph.load(str(bad))
    assert e.value.path == str(bad) and e.value.line == 4 and str(e.value).startswith(f"{bad}:4: ")
    for spec, text in ((str(tmp_path), "has no HLO dumps"), (str(tmp_path / "none.hlo"), "no such file"),
                       (f"{SAVE}#9", "out of range")):  # fmt: skip
        with pytest.raises(xlagraph.InputError, match=text):
            xlagraph.load(spec)
    binary = tmp_path / "latin1.hlo"
    binary.write_bytes(b"HloModule m\n\xff\n")
    with pytest.raises(xlagraph.InputError, match="not UTF-8"):
        xlagraph.load(str(binary))


# --- diff -------------------------------------------------------------------------------------------


def test_diff_is_what_the_cli_prints() -> None:
    d = xlagraph.diff(A, B)
    assert d.verdict == "different" and [str(c.kind) for c in d.causes] == ["parameter_shape"]
    assert d.to_json() + "\n" == cli_out("diff", A, B, "--json")
    assert d.to_text() == cli_out("diff", A, B)
    assert d.to_text(max_changes=1) == cli_out("diff", A, B, "--max-changes", "1")
    assert repr(d).splitlines() == cli_out("diff", A, B).splitlines()[:3]
    assert d.to_dict()["changed"] == {"left": list(d.changed[0]), "right": list(d.changed[1])}


def test_diff_takes_modules_and_its_changed_instructions_are_graph_nodes() -> None:
    left, right = xlagraph.load(A), xlagraph.load(B)
    d = xlagraph.diff(left, right)
    assert d.left is left and d.right is right
    assert d.to_json() == xlagraph.diff(A, B).to_json()
    for side, module in (("A", left), ("B", right)):
        ids = d.changed_ids(side)
        assert ids and set(ids) <= set(module.to_networkx())
    with pytest.raises(ValueError):
        d.changed_ids("C")


def test_identical_graphs() -> None:
    same = str(FIXTURES / "torch_xla" / "reordered_statements")
    d = xlagraph.diff(f"{same}/a.hlo", f"{same}/b.hlo")
    assert d.verdict == "identical" and d.causes == () and d.changed == ((), ())


def test_diff_names_both_inputs_when_one_is_bad(tmp_path: Path) -> None:
    with pytest.raises(xlagraph.InputError, match=r"none\.hlo"):
        xlagraph.diff(A, str(tmp_path / "none.hlo"))


# --- report, check, graphs ----------------------------------------------------------------------------


def test_report_is_what_the_cli_prints() -> None:
    r = xlagraph.report(CAPTURE)
    assert r.to_json() + "\n" == cli_out("report", CAPTURE, "--json")
    assert r.to_text() == cli_out("report", CAPTURE)
    assert r.runs_note and [x.selected for x in r.runs] == [False, True]
    (rc,) = r.recompiles
    assert rc.baseline is not None and rc.baseline.variant == "A" and rc.kinds == ("parameter_shape",)
    assert r.compiles == 2 and [e.variant for e in r.timeline] == ["A", "A", "A", "B"]
    every = xlagraph.report(CAPTURE, run="all")
    assert len(every.processes) == 2 and every.to_json() + "\n" == cli_out(
        "report", CAPTURE, "--json", "--run", "all"
    )
    assert xlagraph.report(CAPTURE, run=1).recompiles == ()


def test_report_drills_into_a_recompiles_diff() -> None:
    r = xlagraph.report(SAVE)
    for rc in r.recompiles:
        d = r.diff(rc)
        assert [str(c.kind) for c in d.causes] == [str(c.kind) for c in rc.causes]
    with pytest.raises(xlagraph.InputError, match="not a recompile"):
        r.diff(dataclasses.replace(r.recompiles[0], sync=-1))


def test_check_is_what_the_cli_prints() -> None:
    for budget in (1, 2):
        c = xlagraph.check(CAPTURE, budget)
        assert c.passed is (budget == 2) and bool(c) is c.passed
        assert c.to_json() + "\n" == cli_out("check", CAPTURE, "--max-graphs", str(budget), "--json")
        assert c.to_text() == cli_out("check", CAPTURE, "--max-graphs", str(budget))
    assert xlagraph.check(SAVE, max_graphs=1, after_step=1).passed
    with pytest.raises(ValueError):
        xlagraph.check(SAVE, max_graphs=-1)
    with pytest.raises(ValueError):
        xlagraph.report(CAPTURE, run="newest")


def test_graphs_lists_like_the_cli() -> None:
    import json

    listing = xlagraph.graphs(SAVE)
    assert json.loads(cli_out("graphs", SAVE, "--json"))["variants"] == list(listing.variants)


# --- the package --------------------------------------------------------------------------------------


def test_engine_modules_named_like_api_functions_stay_modules_and_are_callable() -> None:
    import xlagraph.diff
    import xlagraph.graphs
    import xlagraph.report

    assert xlagraph.diff.diff_modules and xlagraph.graphs.list_graphs and xlagraph.report.build_report
    assert xlagraph.diff(A, B).verdict == "different"
    assert xlagraph.graphs(SAVE).unique == 3
    assert xlagraph.report(SAVE).compiles == 3


def test_engine_modules_imported_before_the_api_are_callable() -> None:
    code = (
        "import xlagraph.diff, xlagraph.graphs, xlagraph.report\n"  # the engine first, the API never
        f"assert xlagraph.diff({A!r}, {B!r}).verdict == 'different'\n"
        f"assert xlagraph.graphs({SAVE!r}).unique == 3\n"
        f"assert xlagraph.report({SAVE!r}).compiles == 3\n"
        "import xlagraph.api\n"
        "assert xlagraph.api.diff is not xlagraph.diff and callable(xlagraph.diff)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True)


def test_import_xlagraph_stays_cheap() -> None:
    code = (
        # `__future__` (the compiler's feature flags, no code) is loaded at start-up or not,
        # depending on the site's .pth files: not a cost of importing xlagraph.
        "import sys\nbefore = set(sys.modules) | {'__future__'}\nimport xlagraph\n"
        "assert sorted(set(sys.modules) - before) == ['xlagraph'], sorted(set(sys.modules) - before)\n"
        "assert isinstance(xlagraph.InputError('f', 'm', 3), Exception)\n"
        "assert 'networkx' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True)


def test_a_diff_of_two_graphs_does_not_import_the_reports_code() -> None:
    """`xlagraph diff a.hlo b.hlo` is told single graphs from the files' heads and reads their
    source lines without `report.build` or `report.ranks` (issue 22: start-up is most of a small
    diff's time)."""
    code = (
        "import sys\nfrom xlagraph.cli.main import xlagraph as cli\n"
        f"cli.main(['diff', {A!r}, {B!r}, '--json'], standalone_mode=False)\n"
        "report = ('build', 'explain', 'explain_workers', 'attribution', 'triggers', 'ranks')\n"
        "loaded = [m for m in sys.modules if m.startswith(tuple(f'xlagraph.report.{r}' for r in report))]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True)


def test_results_are_immutable() -> None:
    d = xlagraph.diff(A, B)
    for obj, name in ((d, "verdict"), (d.left, "name"), (d.left.entry.instructions[0], "opcode"),
                      (xlagraph.check(SAVE, 5), "passed")):  # fmt: skip
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, None)


def test_package_ships_its_types() -> None:
    assert (ROOT / "xlagraph" / "py.typed").exists()
    stub = (ROOT / "xlagraph" / "__init__.pyi").read_text()
    assert all(name in stub for name in xlagraph.__all__)
    assert set(xlagraph.__all__) - {"capture"} <= set(xlagraph.api.__all__)


# --- notebooks ----------------------------------------------------------------------------------------


def test_html_reprs_have_ids_of_their_own_and_fetch_nothing() -> None:
    d = xlagraph.diff(A, B)
    r = xlagraph.report(SAVE)
    pages = [d._repr_html_(), d._repr_html_(), r._repr_html_(), d.left._repr_html_()]
    ids = [i for page in pages for i in re.findall(r'\sid="([^"]+)"', page)]
    assert len(ids) == len(set(ids)), "an id repeats across outputs"
    for page in pages:
        assert page.startswith('<div class="xlagraph" id="xg') and "<html" not in page
        assert not re.search(r'(?:src|href)="(?:https?:)?//', page)
        assert ":root" not in page.split("<style>")[1].split("</style>")[0]  # scoped to the fragment
    assert 'class="cause' in pages[0] and "parameter_shape" in pages[0]
    assert "Recompiles to fix, costliest first" in pages[2]


# --- the docs' examples -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", API_MODULES)
def test_docstring_examples(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples read fixtures/ by relative path
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, result


def test_reference_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(
        str(ROOT / "docs" / "api.md"), module_relative=False, globs={"xlagraph": xlagraph},
        optionflags=doctest.ELLIPSIS,
    )  # fmt: skip
    assert result.failed == 0 and result.attempted >= 10, result


def test_diverge_is_the_cli_as_a_call() -> None:
    """`xlagraph.diverge(a, b)`: the same JSON and text as `xlagraph diverge`, typed."""
    import json
    import subprocess
    import sys

    import xlagraph

    root = Path(__file__).resolve().parent.parent / "fixtures" / "divergence" / "eager"
    d = xlagraph.diverge(root / "ref", root / "nan2")
    assert isinstance(d, xlagraph.Divergence)
    assert (d.verdict, d.first_step) == ("diverged", 2)
    argv = ["-m", "xlagraph.cli.main", "diverge", str(root / "ref"), str(root / "nan2"), "--json"]
    cli = subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 1, cli.stderr
    assert json.loads(cli.stdout) == d.to_dict()
    assert repr(d) == d.to_text().split("\n", 1)[0]
    assert "<iframe" in d._repr_html_() and "http" not in d._repr_html_().split("srcdoc")[0]
    assert xlagraph.diverge(root / "ref", root / "ref2").verdict == "bit_exact"
    with pytest.raises(xlagraph.InputError):
        xlagraph.diverge(root / "nothing-here", root / "ref")


def test_ranks_is_what_graphs_and_diff_print_for_the_ranks_of_a_run() -> None:
    """`xlagraph.ranks` is the rank view the commands print: text and JSON alike."""
    root = ROOT / "fixtures" / "torch_xla" / "ranks" / "short_batch"
    folder = str(root / "dump")
    view = xlagraph.ranks(folder)
    assert view is not None and not view.agree
    assert CliRunner().invoke(cli, ["graphs", folder]).output == view.to_text()
    assert json.loads(CliRunner().invoke(cli, ["graphs", folder, "--json"]).output) == view.to_dict()
    a, b = str(root / "dump" / "rank0"), str(root / "dump" / "rank2")
    pair = xlagraph.ranks(a, b)
    assert pair is not None and [r for r, _ in pair.named] == [0, 2]
    out = CliRunner().invoke(cli, ["diff", a, b])
    assert out.output == pair.to_text() and out.exit_code == 1
    assert json.loads(CliRunner().invoke(cli, ["diff", a, b, "--json"]).output) == pair.to_dict()
    assert xlagraph.ranks(str(ROOT / "fixtures" / "torch_xla" / "ragged_batch" / "a.hlo")) is None
