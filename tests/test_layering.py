"""The house is walked one way: no import cycle, and imports follow the pipeline.

Every module under xlagraph/ and cli/ (as `xlagraph.cli`) is parsed with `ast`; every import
counts, at module level, inside a function (a lazy import) or under `if TYPE_CHECKING:` (a type
needs the module that defines it just as much). An import names the most specific module it
reaches: `from xlagraph.match import _compiled` is `xlagraph.match._compiled`, `from
xlagraph.match import Matching` is `xlagraph.match`. A package `__init__` that Python runs on the
way to a submodule is not an edge (else every package importing its own submodules would be a
cycle), and `importlib.import_module` with a computed name is not seen.

The pipeline, lowest tier first (a module imports only modules of its own tier or lower ones; its
own tier must still be acyclic):

    base      ir, errors, source_paths, progress, runlog, the compiled core, small helpers
    parse     dumps, save files and PT_XLA_DEBUG text -> ir
    canonical ir -> canonical computations and fingerprints
    match     pairs instructions of two canonical computations
    diagnose  names the causes (`diff.py` runs parse -> canonical -> match -> diagnose)
    readers   capture (writer and reader of a run), graphs (listing), diverge (fingerprints)
    outputs   report, render, api
    cli       the click commands
    package   `xlagraph/__init__.py`, the lazy facade over api and capture
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent

TIERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("xlagraph._core", "xlagraph._gc", "xlagraph._kept", "xlagraph._callable", "xlagraph.errors",
              "xlagraph.source_paths", "xlagraph.progress", "xlagraph.ir", "xlagraph.runlog",
              "xlagraph.dynamolog", "xlagraph.opcodes")),
    ("parse", ("xlagraph.parse",)),
    ("canonical", ("xlagraph.canonical",)),
    ("match", ("xlagraph.match",)),
    ("diagnose", ("xlagraph.diagnose", "xlagraph.diff")),
    ("readers", ("xlagraph.capture", "xlagraph.graphs", "xlagraph.diverge")),
    # the pytest plugin explains a failed budget with the report's words: an output
    ("outputs", ("xlagraph.report", "xlagraph.render", "xlagraph.api", "xlagraph.pytest_plugin")),
    ("cli", ("xlagraph.cli",)),
)  # fmt: skip
PACKAGE_TIER = len(TIERS)  # `xlagraph` itself, above everything

# The capture's writer side runs inside the training process: it may import torch / torch_xla
# (lazily). Everything else is the analyzer, which runs where torch is not installed.
TORCH_ALLOWED = ("xlagraph.capture._", "xlagraph.pytest_plugin")
TORCH = ("torch", "torch_xla", "torchvision", "torchaudio")


# --- the graph ---------------------------------------------------------------------------------------


def find_modules(root: Path) -> dict[str, Path | None]:
    """Module name -> file (None for a compiled extension) of xlagraph/ and cli/ under `root`."""
    found: dict[str, Path | None] = {}
    for base in ("xlagraph", "cli"):
        if not (root / base).is_dir():
            continue
        for path in sorted((root / base).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if base == "xlagraph" and parts[1] in ("cli", "templates"):  # symlinks to ../cli, ../templates
                continue
            if base == "cli":
                parts.insert(0, "xlagraph")
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    for path in (root / "xlagraph").glob("*.so"):
        found["xlagraph." + path.name.split(".")[0]] = None
    return found


def _resolve(name: str, modules: dict[str, Path | None]) -> str | None:
    """The most specific module of ours that `name` (a module or a name in one) lies in."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imported_names(tree: ast.AST, package: str) -> list[tuple[str, int]]:
    """(dotted name, line) of every import anywhere in `tree`; `from m import n` gives `m.n`.
    `package` resolves relative imports."""
    names: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            names += [(f"{base}.{a.name}", node.lineno) for a in node.names]
    return names


def import_graph(root: Path) -> tuple[nx.DiGraph, dict[str, list[tuple[str, str]]]]:
    """The graph of imports between our modules (edge attribute `at`: `file:line`), and each
    module's imports of other packages (top-level name, `file:line`)."""
    modules = find_modules(root)
    graph = nx.DiGraph()
    outside: dict[str, list[tuple[str, str]]] = {}
    for name, path in modules.items():
        graph.add_node(name)
        if path is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for target, line in imported_names(tree, package):
            at = f"{path.relative_to(root)}:{line}"
            if target.split(".")[0] != "xlagraph":
                outside.setdefault(name, []).append((target.split(".")[0], at))
                continue
            to = _resolve(target, modules)
            if to is not None and to != name and not graph.has_edge(name, to):
                graph.add_edge(name, to, at=at)
    return graph, outside


def tier_of(module: str) -> int | None:
    """The pipeline tier of `module` (the longest prefix in TIERS), None when none names it."""
    if module == "xlagraph":
        return PACKAGE_TIER
    best: tuple[int, int] | None = None
    for i, (_, prefixes) in enumerate(TIERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return None if best is None else best[0]


@pytest.fixture(scope="module")
def house() -> tuple[nx.DiGraph, dict[str, list[tuple[str, str]]]]:
    return import_graph(ROOT)


@pytest.fixture(scope="module")
def graph(house: tuple[nx.DiGraph, dict[str, list[tuple[str, str]]]]) -> nx.DiGraph:
    return house[0]


def _edge(g: nx.DiGraph, a: str, b: str) -> str:
    return f"{a} -> {b} ({g.edges[a, b]['at']})"


# --- the rules ---------------------------------------------------------------------------------------


def test_the_graph_holds_the_whole_house(graph: nx.DiGraph) -> None:
    for name in ("xlagraph.parse.hlo", "xlagraph.match._compiled", "xlagraph.cli.main", "xlagraph._core"):
        assert name in graph
    assert graph.has_edge("xlagraph.cli.report", "xlagraph.api")  # a lazy import inside a command
    assert graph.number_of_nodes() > 150


def test_no_import_cycles(graph: nx.DiGraph) -> None:
    # One cycle shown per knot of modules that reach each other (listing every cycle can explode).
    knots = sorted((sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1), key=len)
    shown = [
        "\n  ".join(_edge(graph, a, b) for a, b, *_ in nx.find_cycle(graph.subgraph(knot))) for knot in knots
    ]
    assert not knots, "import cycles; move the shared code down:\n" + "\n".join(shown)


def test_every_module_has_a_tier(graph: nx.DiGraph) -> None:
    assert [m for m in graph if tier_of(m) is None] == [], "add the new module's package to TIERS"


def test_imports_follow_the_pipeline(graph: nx.DiGraph) -> None:
    upward = [
        f"{_edge(graph, a, b)}: {TIERS[tier_of(a) or 0][0]} imports {TIERS[tier_of(b) or 0][0]}"
        for a, b in graph.edges
        if (tier_of(a) or 0) < (tier_of(b) or 0)
    ]
    assert upward == [], "imports that point up the pipeline:\n" + "\n".join(upward)


def test_nothing_of_the_library_imports_the_cli(graph: nx.DiGraph) -> None:
    bad = [
        _edge(graph, a, b)
        for a, b in graph.edges
        if b.startswith("xlagraph.cli") and not a.startswith("xlagraph.cli")
    ]
    assert bad == []


CLI_MAY_IMPORT = ("xlagraph.api", "xlagraph.errors", "xlagraph.progress")


def test_the_cli_only_parses_arguments_and_calls_the_api(graph: nx.DiGraph) -> None:
    """`cli/` reaches the library through `xlagraph.api` (its public names, not its private
    modules), `xlagraph.errors` and `xlagraph.progress`: what it needs beyond them is API."""
    wrong = [
        _edge(graph, a, b)
        for a, b in graph.edges
        if a.startswith("xlagraph.cli") and not b.startswith("xlagraph.cli") and b not in CLI_MAY_IMPORT
    ]
    assert not wrong, "\n".join(wrong)


def test_the_analyzer_imports_no_torch(house: tuple[nx.DiGraph, dict[str, list[tuple[str, str]]]]) -> None:
    outside = house[1]
    bad = [
        f"{module} imports {name} ({at})"
        for module, names in outside.items()
        if not module.startswith(TORCH_ALLOWED)
        for name, at in names
        if name in TORCH
    ]
    assert bad == [], "the analyzer runs where torch is not installed:\n" + "\n".join(bad)


def test_the_library_imports_nothing_of_the_tests(
    house: tuple[nx.DiGraph, dict[str, list[tuple[str, str]]]],
) -> None:
    """tests/ holds reference implementations (tests/stablehlo_reference: the Python StableHLO
    reader the core was ported from), oracles of the compiled rules, never a second engine."""
    bad = [f"{module} imports {name} ({at})" for module, names in house[1].items() for name, at in names
           if name == "tests"]  # fmt: skip
    assert bad == [], "the library must not import from tests/:\n" + "\n".join(bad)


def _diagnosis_importing_outputs(g: nx.DiGraph) -> list[str]:
    return [
        _edge(g, a, b)
        for a, b in g.edges
        if a.startswith(("xlagraph.diagnose", "xlagraph.diff"))
        and b.startswith(("xlagraph.report", "xlagraph.render", "xlagraph.api"))
    ]


def test_diagnosis_imports_nothing_of_the_report(graph: nx.DiGraph) -> None:
    """diagnose decides, the report and renderers display (issue 39): a rule that needs a report type
    moves the type down (`diagnose/recompile.py`) or takes what it reads (`dynamo_join.Retrace`)."""
    assert _diagnosis_importing_outputs(graph) == []


# --- the checker itself ------------------------------------------------------------------------------


def test_the_checker_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "xlagraph"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from xlagraph.sub.b import f\n")
    (pkg / "sub" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from xlagraph.sub.b import B\n"
    )
    (pkg / "sub" / "b.py").write_text("def f():\n    from . import a\n    import torch\n")
    g, outside = import_graph(tmp_path)
    assert g.edges["xlagraph.sub.a", "xlagraph.sub.b"]["at"] == "xlagraph/sub/a.py:3"
    assert g.edges["xlagraph.sub.b", "xlagraph.sub.a"]["at"] == "xlagraph/sub/b.py:2"
    assert g.has_edge("xlagraph.sub", "xlagraph.sub.b")
    assert sorted(map(sorted, nx.simple_cycles(g))) == [["xlagraph.sub.a", "xlagraph.sub.b"]]
    assert outside["xlagraph.sub.b"] == [("torch", "xlagraph/sub/b.py:3")]


def test_the_checker_sees_a_diagnosis_reaching_for_the_report(tmp_path: Path) -> None:
    pkg = tmp_path / "xlagraph"
    for sub in ("diagnose", "report"):
        (pkg / sub).mkdir(parents=True)
    (pkg / "report" / "model.py").write_text("class Recompile: ...\n")
    (pkg / "diagnose" / "rule.py").write_text(
        "def f():\n    from xlagraph.report.model import Recompile\n"
    )
    assert _diagnosis_importing_outputs(import_graph(tmp_path)[0]) == [
        "xlagraph.diagnose.rule -> xlagraph.report.model (xlagraph/diagnose/rule.py:2)"
    ]


# A renderer shows what diagnosis decided: it never reads, canonicalizes, matches or diffs graphs
# itself (the report's diffs come from `Report.diffs`, what changed from `diagnose.changed`).
ENGINE = {
    "xlagraph.parse": None,  # every name: reading is not a renderer's job
    "xlagraph.canonical.engine": None,
    "xlagraph.report.diffs": None,
    "xlagraph.report.build": None,
    "xlagraph.report.load": None,
    "xlagraph.diff": {"diff_modules", "diff_files", "canonical_of"},
    "xlagraph.match": {"match"},
    "xlagraph.canonical": {"canonicalize"},
}


def test_renderers_neither_read_nor_compare_graphs() -> None:
    found = []
    for path in sorted((ROOT / "xlagraph" / "render").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            for module, names in ENGINE.items():
                if node.module != module and not node.module.startswith(module + "."):
                    continue
                bad = [a.name for a in node.names if names is None or a.name in names]
                found += [f"{path.name}:{node.lineno} imports {node.module}.{n}" for n in bad]
    assert not found, "\n".join(found)


# What a renderer may read of diagnose: the decided results and the words for them (the causes,
# what changed per instruction, plurals, a frame's parts), not the steps that decide (the tiers
# above let the outputs tier import all of diagnose, so this is the tighter rule issue 39 asks for).
RENDER_MAY_READ_OF_DIAGNOSE = {"causes", "changed", "listing", "frames"}


def test_renderers_read_only_what_diagnose_decided() -> None:
    import xlagraph.diagnose as diagnose

    found = []
    for path in sorted((ROOT / "xlagraph" / "render").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module == "xlagraph.diagnose":
                # the package's names live in its modules (`_HOME`); a name not there is a module
                modules = [f"xlagraph.diagnose.{diagnose._HOME.get(a.name, a.name)}" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                parts = module.split(".")
                if (
                    parts[:2] == ["xlagraph", "diagnose"]
                    and parts[2:3]
                    and parts[2] not in RENDER_MAY_READ_OF_DIAGNOSE
                ):
                    found.append(f"{path.name}:{node.lineno} imports {module}")
    assert not found, "a renderer displays what diagnose decided:\n" + "\n".join(found)


def test_diagnose_names_each_resolve_from_their_module() -> None:
    """`xlagraph.diagnose` imports its names on first use (so `diagnose.listing` alone stays
    cheap): every exported name has a home, and each resolves to that module's object."""
    import importlib

    import xlagraph.diagnose as diagnose

    assert sorted(diagnose._HOME) == sorted(diagnose.__all__)
    for name, home in diagnose._HOME.items():
        assert getattr(diagnose, name) is getattr(importlib.import_module(f"xlagraph.diagnose.{home}"), name)


def _private_diagnose_imports(root: Path) -> list[str]:
    """`file:line name` for each import under `xlagraph/report/` of a private name of diagnose: a
    module or name starting with `_` (`recognizers._statements`, `frames._split`)."""
    found = []
    for path in sorted((root / "xlagraph" / "report").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                dotted = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                dotted = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in dotted:
                parts = name.split(".")
                if parts[:2] == ["xlagraph", "diagnose"] and any(p.startswith("_") for p in parts[2:]):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return sorted(found)


def test_the_report_imports_nothing_private_of_diagnose() -> None:
    """The report places what diagnose decided through diagnose's public names (issue 39): a rule
    it needs from a private module is a diagnose rule, and a helper it needs is made public."""
    assert _private_diagnose_imports(ROOT) == [], "\n".join(_private_diagnose_imports(ROOT))


def test_the_checker_sees_a_private_diagnose_import(tmp_path: Path) -> None:
    (tmp_path / "xlagraph" / "report").mkdir(parents=True)
    (tmp_path / "xlagraph" / "report" / "a.py").write_text(
        "from xlagraph.diagnose.frames import location\n"
        "def f():\n    from xlagraph.diagnose.recognizers._source import calls_of_function\n"
        "from xlagraph.diagnose import _HOME\n"
    )
    assert _private_diagnose_imports(tmp_path) == [
        "xlagraph/report/a.py:3 xlagraph.diagnose.recognizers._source.calls_of_function",
        "xlagraph/report/a.py:4 xlagraph.diagnose._HOME",
    ]


def _fixes_picked_in_report(root: Path) -> list[str]:
    """`file:line name` for each name of `diagnose.fixes` imported under `xlagraph/report/` other
    than `fix` (the words of a fix ID diagnose chose): a fix text or ID the report names itself
    means the report picks a fix (eager mode's was `EAGER_SHAPE_FIX` in `report/eager.py`)."""
    found = []
    for path in sorted((root / "xlagraph" / "report").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "xlagraph.diagnose.fixes":
                found += [
                    f"{path.relative_to(root)}:{node.lineno} {a.name}" for a in node.names if a.name != "fix"
                ]
            elif isinstance(node, ast.ImportFrom) and node.module == "xlagraph.diagnose":
                found += [
                    f"{path.relative_to(root)}:{node.lineno} fixes" for a in node.names if a.name == "fixes"
                ]
    return sorted(found)


def test_the_report_picks_no_fix() -> None:
    """Diagnose decides each fix (issue 39); the report only turns a chosen ID into its words."""
    assert _fixes_picked_in_report(ROOT) == [], "\n".join(_fixes_picked_in_report(ROOT))


def test_the_checker_sees_a_fix_picked_in_the_report(tmp_path: Path) -> None:
    (tmp_path / "xlagraph" / "report").mkdir(parents=True)
    (tmp_path / "xlagraph" / "report" / "a.py").write_text(
        "from xlagraph.diagnose.fixes import fix\n"
        "def f():\n    from xlagraph.diagnose.fixes import EAGER_SHAPE_FIX\n"
        "from xlagraph.diagnose import fixes\n"
    )
    assert _fixes_picked_in_report(tmp_path) == [
        "xlagraph/report/a.py:3 EAGER_SHAPE_FIX",
        "xlagraph/report/a.py:4 fixes",
    ]
