"""Renderers and `list_graphs`, on real PyTorch/XLA dumps (tests/data, see make_cli_data.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from xlagraph.diagnose.causes import Cause, CauseKind, Change, Moved
from xlagraph.diagnose.changed import changed_instructions
from xlagraph.diff import DiffResult, diff_files
from xlagraph.errors import InputError
from xlagraph.graphs import GraphListing, list_graphs, variant_letter
from xlagraph.parse.sources import open_source
from xlagraph.render.json import diff_to_json, graphs_to_json
from xlagraph.render.text import render_diff_text, render_graphs_text

DATA = Path(__file__).parent / "data"
TRAIN = str(DATA / "train.hlo.txt")  # 6 steps: 0-2 and 4 steady (A), 3 keeps a tensor alive (B), 5 ragged (C)


def data(name: str) -> str:
    return str(DATA / name)


@pytest.fixture(scope="module")
def identical() -> DiffResult:
    return diff_files(data("step.hlo"), data("step.noshapes.hlo"))


@pytest.fixture(scope="module")
def kept_alive() -> DiffResult:
    return diff_files(f"{TRAIN}#2", f"{TRAIN}#3")


@pytest.fixture(scope="module")
def permuted() -> DiffResult:
    return diff_files(data("order_ab.hlo"), data("order_ba.hlo"))


@pytest.fixture(scope="module")
def train() -> GraphListing:
    return list_graphs(TRAIN)


# --- diff, text -------------------------------------------------------------------------------


def test_identical_text_starts_with_verdict_and_names_both_sides(identical: DiffResult) -> None:
    text = render_diff_text(identical)
    lines = text.splitlines()
    assert lines[0] == "identical"
    assert lines[1].lstrip().startswith("A  ") and data("step.hlo") in lines[1]
    assert lines[2].lstrip().startswith("B  ") and data("step.noshapes.hlo") in lines[2]
    assert identical.left.fingerprint in lines[1]
    assert identical.right.fingerprint in lines[2]
    assert "changed instructions" not in text


def test_different_text_counts_causes_and_puts_them_first(kept_alive: DiffResult) -> None:
    text = render_diff_text(kept_alive)
    n = len(kept_alive.differences)
    assert text.splitlines()[0] == f"different: {n} cause" + ("" if n == 1 else "s")
    assert "output_added: B returns 1 more tensor than A" in text
    # causes, then changed instructions, then notes
    assert text.index("output_added") < text.index("changed instructions")
    if kept_alive.notes:
        assert text.index("changed instructions") < text.index("note: ")


def test_text_shows_user_source_line_and_fix(kept_alive: DiffResult) -> None:
    text = render_diff_text(kept_alive)
    cause = next(c for c in kept_alive.differences if c.kind is CauseKind.OUTPUT_ADDED)
    assert cause.sources, "XLA_HLO_DEBUG=1 dumps carry source lines"
    assert "make_cli_data.py:" in text
    assert "fix   " + cause.hint.split()[0] in text


def test_text_shows_graph_hashes_of_save_file_graphs(kept_alive: DiffResult) -> None:
    text = render_diff_text(kept_alive)
    assert kept_alive.left.module.info.graph_hash in text
    assert f"{TRAIN}#2" in text and f"{TRAIN}#3" in text


def test_permutation_is_a_table(permuted: DiffResult) -> None:
    text = render_diff_text(permuted)
    perm = next(c for c in permuted.differences if c.kind is CauseKind.OUTPUT_PERMUTATION)
    moved = [m for m in perm.mapping if m.left != m.right]
    for m in moved:
        assert any(
            f"A#{m.left}" in line and f"B#{m.right}" in line and m.shape in line for line in text.splitlines()
        )


def test_changed_instructions_union_of_non_info_causes(kept_alive: DiffResult) -> None:
    left, right = changed_instructions(kept_alive.differences)
    expected_right = {n for c in kept_alive.differences for n in c.right}
    assert expected_right <= set(right)
    dead = {n for c in kept_alive.left.computations.values() for n in c.dead}
    assert not dead & set(left)


def _many_changes(result: DiffResult, count: int) -> DiffResult:
    """The real result plus one cause over `count` of the real graph's instructions."""
    names = list(result.left.entry.order)[:count]
    cause = Cause(
        CauseKind.ATTRIBUTE,
        "synthetic cause over real instruction names",
        "hint",
        left=tuple(names),
        right=tuple(names),
        changes=tuple(Change(n, n, "shape", "f32[4]", "f32[3]") for n in names),
        mapping=tuple(Moved(i, count - 1 - i, "f32[]", n, n) for i, n in enumerate(names)),
    )
    return replace(result, causes=(*result.causes, cause))


def test_max_changes_bounds_every_list(identical: DiffResult) -> None:
    result = _many_changes(identical, 30)
    text = render_diff_text(result, max_changes=5)
    assert text.count("... and 25 more not shown") == 4  # changes, moved rows, A names, B names
    unbounded = render_diff_text(result, max_changes=0)
    assert "more not shown" not in unbounded


def test_many_causes_of_one_kind_are_grouped_with_one_fix(identical: DiffResult) -> None:
    extra = tuple(
        Cause(CauseKind.CONSTANT_VALUE, f"constant c.{i} changed {i} -> {i + 1}", "the fix") for i in range(4)
    )
    text = render_diff_text(replace(identical, causes=(*identical.causes, *extra)), max_changes=3)
    assert "constant_value (4 causes):" in text
    assert text.count("the fix") == 1
    assert "... and 1 more not shown" in text


def test_text_is_deterministic(kept_alive: DiffResult) -> None:
    again = diff_files(f"{TRAIN}#2", f"{TRAIN}#3")
    assert render_diff_text(kept_alive) == render_diff_text(again)


# --- diff, JSON -------------------------------------------------------------------------------


def test_diff_json_schema(kept_alive: DiffResult) -> None:
    doc = diff_to_json(kept_alive)
    assert json.loads(json.dumps(doc)) == doc
    assert list(doc) == [
        "verdict", "differences", "left", "right", "causes", "notes", "unseen_constants", "changed",
        "one_compile",
    ]  # fmt: skip
    assert doc["verdict"] == "different"
    assert doc["differences"] == len(kept_alive.differences)
    for side, canon in (("left", kept_alive.left), ("right", kept_alive.right)):
        assert doc[side] == {
            "label": canon.module.info.label,
            "path": canon.module.path,
            "name": canon.module.name,
            "format": "hlo",
            "fingerprint": canon.fingerprint,
            "instructions": canon.module.instruction_count,
            "computations": len(canon.module.computations),
            "graph_hash": canon.module.info.graph_hash,
        }
    assert [c["kind"] for c in doc["causes"]] == [str(c.kind) for c in kept_alive.causes]
    cause = doc["causes"][0]
    assert set(cause) == {
        "kind", "summary", "hint", "fix_id", "info", "computation", "left", "right", "changes", "mapping",
        "sources",
        "library_sources", "count",
    }  # fmt: skip
    assert doc["changed"] == {"left": [], "right": list(changed_instructions(kept_alive.differences)[1])}


def test_diff_json_changes_and_mapping(permuted: DiffResult) -> None:
    doc = diff_to_json(_many_changes(permuted, 3))
    cause = doc["causes"][-1]
    assert cause["changes"][0] == {"left": cause["left"][0], "right": cause["left"][0], "what": "shape",
                                   "old": "f32[4]", "new": "f32[3]"}  # fmt: skip
    assert set(cause["mapping"][0]) == {"left", "right", "shape", "left_name", "right_name", "what"}
    # inputs and outputs reordered by one reason: one cause, each move saying which it is
    perm = next(c for c in doc["causes"] if c["kind"] == "output_permutation")
    assert all(isinstance(m["left"], int) and isinstance(m["right"], int) for m in perm["mapping"])
    assert {m["what"] for m in perm["mapping"]} == {"input", "output"}


def test_identical_json(identical: DiffResult) -> None:
    doc = diff_to_json(identical)
    assert doc["verdict"] == "identical"
    assert doc["differences"] == 0
    assert doc["causes"] == []  # identical <=> no causes; remarks are notes
    assert doc["changed"] == {"left": [], "right": []}
    assert json.dumps(doc) == json.dumps(diff_to_json(identical))


# --- list_graphs ------------------------------------------------------------------------------


def test_variant_letters() -> None:
    assert [variant_letter(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)] == [
        "A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA",
    ]  # fmt: skip
    with pytest.raises(ValueError):
        variant_letter(-1)


def test_list_graphs_save_file(train: GraphListing) -> None:
    assert train.kind == "save-file"
    assert [r.index for r in train.rows] == list(range(6))
    assert [r.variant for r in train.rows] == ["A", "A", "A", "B", "A", "C"]
    assert train.unique == 3 and train.variants == ("A", "B", "C")
    assert train.unique_graph_hashes == 3
    assert all(r.graph_hash and r.format == "hlo" for r in train.rows)
    assert [r.label for r in train.rows] == [f"{TRAIN}#{i}" for i in range(6)]
    assert train.rows[0].fingerprint == diff_files(f"{TRAIN}#0", f"{TRAIN}#1").left.fingerprint
    assert train.rows[3].instructions > train.rows[2].instructions  # the extra output


def test_list_graphs_parses_each_distinct_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import xlagraph.graphs as graphs

    calls: list[str] = []
    real_summarize = graphs._summarize  # reads a graph (the compiled core's summary, or the IR)
    monkeypatch.setattr(graphs, "_summarize", lambda g: calls.append(g.label) or real_summarize(g))
    listing = graphs.list_graphs(TRAIN)
    distinct = {(g.format, g.text) for g in open_source(TRAIN).graphs}
    assert len(calls) == len(distinct) < len(listing.rows)  # steps 1, 2 and 4 print the same text


def test_list_graphs_thousand_repeats_parse_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A save file repeating one real block 1000 times, as a long steady loop writes it."""
    import xlagraph.graphs as graphs

    text = Path(TRAIN).read_text()
    starts = [i for i in range(len(text)) if text.startswith("[ScheduleSyncTensorsGraph]", i)]
    block = text[starts[1] : starts[2]]  # step 1, steady state
    path = tmp_path / "long.txt"
    path.write_text(block * 1000)
    calls: list[str] = []
    real_summarize = graphs._summarize  # reads a graph (the compiled core's summary, or the IR)
    monkeypatch.setattr(graphs, "_summarize", lambda g: calls.append(g.label) or real_summarize(g))
    seen: list[tuple[int, int]] = []
    listing = graphs.list_graphs(str(path), progress=lambda done, total: seen.append((done, total)))
    assert len(listing.rows) == 1000
    assert len(calls) == 1
    assert listing.unique == 1 and listing.unique_graph_hashes == 1
    assert seen[0] == (1, 1000) and seen[-1] == (1000, 1000) and len(seen) == 1000


def test_list_graphs_dump_dir_and_lazy_ir() -> None:
    dump = list_graphs(data("train_dump"))
    assert dump.kind == "dump-dir"
    assert [r.stage for r in dump.rows].count("before_optimizations") == 3
    assert all(r.graph_hash == "" for r in dump.rows)
    lazy = list_graphs(data("train.ir.txt"))
    assert {r.format for r in lazy.rows} == {"lazy-ir"}
    assert lazy.rows[3].variant != lazy.rows[2].variant  # the step that keeps a tensor alive


def test_list_graphs_truncated_last_block_is_a_note(tmp_path: Path) -> None:
    text = Path(TRAIN).read_text()
    cut = tmp_path / "cut.txt"
    cut.write_text(text[: text.rindex("## END_GRAPH") - 200])  # a run killed mid-write
    listing = list_graphs(str(cut))
    assert len(listing.rows) == 5
    assert listing.notes and "truncated" in listing.notes[0]
    assert graphs_to_json(listing)["notes"] == list(listing.notes)
    assert "note: " in render_graphs_text(listing)


def test_list_graphs_raises_on_a_bad_graph(tmp_path: Path) -> None:
    lines = Path(TRAIN).read_text().split("\n")
    target = next(i for i, line in enumerate(lines) if i > 300 and " multiply(" in line)
    lines[target] = lines[target].replace(" = ", " = = ", 1)  # hand-made corruption of one real line
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines))
    with pytest.raises(InputError) as info:
        list_graphs(str(bad))
    assert target + 1 <= info.value.line <= target + 2  # the bad line, or the first use it breaks
    assert str(info.value).startswith(f"{bad}:{info.value.line}: ")


# --- graphs, text and JSON ------------------------------------------------------------------------


def test_graphs_text(train: GraphListing) -> None:
    text = render_graphs_text(train)
    lines = text.splitlines()
    assert lines[0].split() == [
        "index", "name", "instructions", "computations", "graph", "hash", "fingerprint", "variant", "stage",
    ]  # fmt: skip
    assert [line.split()[0] for line in lines[1:7]] == [str(i) for i in range(6)]
    assert "6 graphs, 3 unique (variants A, B, C); 3 graph hashes" in text
    assert f"xlagraph diff {TRAIN}#0 {TRAIN}#3" in text
    for row in train.rows:
        assert row.fingerprint in text and row.graph_hash in text


def test_graphs_text_single_graph() -> None:
    text = render_graphs_text(list_graphs(data("step.hlo")))
    assert "1 graph, 1 unique (variant A)" in text
    assert "xlagraph diff" not in text


def test_graphs_suggestion_stays_within_a_stage() -> None:
    text = render_graphs_text(list_graphs(data("train_dump")))
    dump = data("train_dump")
    assert f"xlagraph diff {dump}#0 {dump}#2" in text  # before_optimizations of two compiles


def test_graphs_json(train: GraphListing) -> None:
    doc = graphs_to_json(train)
    assert json.loads(json.dumps(doc)) == doc
    assert doc["unique"] == 3 and doc["variants"] == ["A", "B", "C"] and doc["notes"] == []
    assert doc["unique_graph_hashes"] == 3 and doc["kind"] == "save-file" and doc["path"] == TRAIN
    assert list(doc["modules"][0]) == [
        "index", "name", "label", "instructions", "computations", "graph_hash", "fingerprint", "variant",
        "stage", "compile", "format",
    ]  # fmt: skip
    assert [m["variant"] for m in doc["modules"]] == [r.variant for r in train.rows]


def test_graphs_text_bounds_the_variant_list(train: GraphListing) -> None:
    """A loop that recompiles every step: 30 graphs, 30 variants (real rows, variants renamed)."""
    rows = tuple(
        replace(train.rows[i % 6], index=i, variant=variant_letter(i), fingerprint=f"{i:016x}")
        for i in range(30)
    )
    text = render_graphs_text(replace(train, rows=rows))
    assert "30 graphs, 30 unique (variants A, B, C, D, E, F, G, H, I, J, ..., AD)" in text
    assert "note: more graph hashes" not in text  # 3 hashes, 30 variants
