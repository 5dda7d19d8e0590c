"""The HTML diff page, built from the real fixture pairs (no browser: see test_html_browser.py).

Every page must open offline (nothing fetched), every in-page link must land on an element, every
instruction a cause names must have an anchor on both sides, and text from a dump must stay text.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path

import pytest
from click.testing import CliRunner
from xlagraph.cli.main import xlagraph

import xlagraph.render.html_diff as html_mod
from xlagraph.diagnose.changed import changed_instructions
from xlagraph.diff import DiffResult, diff_files
from xlagraph.ir import Frame
from xlagraph.render.html_common import element_id, script_json
from xlagraph.render.html_diff import build_diff_view, render_diff_html
from xlagraph.render.html_diff_view import DiffView, Row, Run
from xlagraph.render.html_report import build_run_view, render_report_html
from xlagraph.report import RunReport, TensorRef, build_report, load_runs
from xlagraph.report.diffs import recompile_diffs

ROOT = Path(__file__).resolve().parent.parent


def instruction_anchor(tag: str, computation: str, name: str, prefix: str = "") -> str:
    """The id the page gives instruction `name` of `computation` on side `tag` (`A` or `B`), unless
    it collided with an earlier id after sanitizing (then `-2`, `-3` … are appended)."""
    return element_id("L" if tag == "A" else "R", computation, name, prefix=prefix)


PAIRS = sorted(
    [p for p in (ROOT / "fixtures" / "jax" / "pairs").iterdir() if (p / "a.hlo").exists()]
    + [
        p
        for p in (ROOT / "fixtures" / "torch_xla").iterdir()
        if (p / "a.hlo").exists() and (p / "b.hlo").exists()
    ]
)
PAIR_IDS = [f"{p.parent.name}/{p.name}" for p in PAIRS]
INJECTION = "</script><script>alert(1)</script>"


class _Page(HTMLParser):
    """Ids, in-page links and script blocks of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.hrefs: list[str] = []
        self.refs: list[str] = []
        self.srcs: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.data_json = ""
        self._in_data = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(a["id"] or "")
        for key in ("href", "data-cp-href"):
            if a.get(key):
                self.hrefs.append(a[key] or "")
        for key in ("data-ref", "data-cp-ref"):
            if a.get(key):
                self.refs.append(a[key] or "")
        if "src" in a:
            self.srcs.append(a["src"] or "")
        if tag == "script":
            self.scripts.append(a)
            self._in_data = a.get("id") == "xg-data"

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_data = False

    def handle_data(self, data: str) -> None:
        if self._in_data:
            self.data_json += data


def parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def shipped_ids(parsed: _Page) -> set[str]:
    """Ids of the rows the script builds on demand from the page's data."""
    data = json.loads(parsed.data_json)
    return {row["i"] for run in data["runs"].values() for row in run["rows"]}


@pytest.fixture(scope="module", params=PAIRS, ids=PAIR_IDS)
def pair(request: pytest.FixtureRequest) -> tuple[DiffResult, str]:
    path: Path = request.param
    result = diff_files(str(path / "a.hlo"), str(path / "b.hlo"))
    return result, render_diff_html(result)


def test_there_are_fixture_pairs() -> None:
    assert len(PAIRS) >= 14, PAIRS


# --- self-contained ---------------------------------------------------------------------------


def assert_self_contained(page: str) -> None:
    parsed = parse(page)
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""(?:src|href)\s*=\s*["']?//""", page)
    assert "@import" not in page and "url(" not in page
    assert parsed.srcs == [], "nothing is loaded from a src attribute"
    assert "<link" not in page
    assert all(h.startswith("#") for h in parsed.hrefs), [h for h in parsed.hrefs if not h.startswith("#")]
    # The CSP forbids fetching anything, should a later change try to.
    assert "default-src 'none'" in page


def test_page_is_self_contained(pair: tuple[DiffResult, str]) -> None:
    _, page = pair
    assert page.startswith("<!DOCTYPE html>")
    assert_self_contained(page)
    assert len(parse(page).scripts) == 2  # the data block and the inlined script


# --- links -------------------------------------------------------------------------------------


def assert_links_land(page: str) -> None:
    parsed = parse(page)
    ids = set(parsed.ids)
    assert len(ids) == len(parsed.ids), "ids are unique"
    missing = [h for h in parsed.hrefs if h[1:] not in ids]
    assert not missing, missing[:10]
    shipped = shipped_ids(parsed)
    assert not ids & shipped, "a row is either in the page or in its data, not both"
    dangling = [r for r in parsed.refs if r not in ids and r not in shipped]
    assert not dangling, dangling[:10]
    # Rows the script builds link the same way: their links land on the page or the data too.
    for run in json.loads(parsed.data_json)["runs"].values():
        for row in run["rows"]:
            for text, href, ref, _ in [*row.get("a", []), *([row["c"]] if row.get("c") else [])]:
                assert not href or href[1:] in ids, (text, href)
                assert not ref or ref in ids or ref in shipped, (text, ref)


def test_every_in_page_link_lands_on_an_element(pair: tuple[DiffResult, str]) -> None:
    assert_links_land(pair[1])


def test_every_instruction_a_cause_names_has_an_anchor_on_both_sides(pair: tuple[DiffResult, str]) -> None:
    result, page = pair
    ids = set(parse(page).ids)
    left, right = changed_instructions(result.differences)
    for tag, names, canon in (("A", left, result.left), ("B", right, result.right)):
        for name in names:
            anchors = {
                instruction_anchor(tag, c.name, name) for c in canon.module.computations if name in c.by_name
            }
            assert anchors & ids, f"{tag} {name}: none of {sorted(anchors)} in the page"


def test_causes_link_to_their_instructions(pair: tuple[DiffResult, str]) -> None:
    result, page = pair
    view = build_diff_view(result)
    assert len(view.causes) == len(result.differences)
    for cause, shown in zip(result.differences, view.causes, strict=True):
        assert shown.summary == cause.summary
        assert [x.text for x in shown.left] == [x for x in dict.fromkeys(cause.left) if x][: len(shown.left)]
        assert all(x.href for x in shown.left + shown.right), "every named instruction is reachable"
    if result.verdict == "different":
        assert 'class="cause ' in page


def test_every_instruction_is_a_row_or_counted_in_a_run(pair: tuple[DiffResult, str]) -> None:
    result, _ = pair
    view = build_diff_view(result, context_lines=1)
    for section in view.sections:
        for column, canon in ((section.left, result.left), (section.right, result.right)):
            if column is None:
                continue
            comp = canon.module.by_name[column.computation]
            rows = sum(1 for b in column.blocks if isinstance(b, Row))
            counted = sum(b.count for b in column.blocks if isinstance(b, Run))
            assert rows + counted == len(comp.instructions)
            pairs = pairwise(column.blocks)
            assert not any(isinstance(x, Run) and isinstance(y, Run) for x, y in pairs), "runs are maximal"


def test_differing_instructions_are_rows_with_context(pair: tuple[DiffResult, str]) -> None:
    result, _ = pair
    context = 2
    view = build_diff_view(result, context_lines=context)
    for section in view.sections:
        for column, canon in ((section.left, result.left), (section.right, result.right)):
            if column is None:
                continue
            printed = [i.name for i in canon.module.by_name[column.computation].instructions]
            rows = {b.name for b in column.blocks if isinstance(b, Row)}
            differing = [
                b for b in column.blocks if isinstance(b, Row) and b.status in ("cause", "only-A", "only-B")
            ]
            for row in differing:
                k = printed.index(row.name)
                for near in printed[max(k - context, 0) : k + context + 1]:
                    assert near in rows, f"{near} is context of {row.name}"


# --- specific pairs ------------------------------------------------------------------------------


def fixture(name: str) -> tuple[str, str]:
    return str(ROOT / "fixtures/jax/pairs" / name / "a.hlo"), str(
        ROOT / "fixtures/jax/pairs" / name / "b.hlo"
    )


def test_opcode_change_highlights_both_sides_and_links_counterparts() -> None:
    result = diff_files(*fixture("opcode_change"))
    page = render_diff_html(result)
    view = build_diff_view(result)
    (section,) = view.sections
    assert section.left is not None and section.right is not None
    lrow = next(b for b in section.left.blocks if isinstance(b, Row) and b.name == "tanh.1")
    rrow = next(b for b in section.right.blocks if isinstance(b, Row) and b.name == "sin.1")
    assert lrow.status == rrow.status == "cause"
    assert lrow.opcode_delta and rrow.opcode_delta and not lrow.shape_delta
    assert lrow.counterpart is not None and lrow.counterpart.href == "#" + rrow.id
    assert rrow.counterpart is not None and rrow.counterpart.href == "#" + lrow.id
    assert f'id="{lrow.id}"' in page and f'data-cp-href="#{rrow.id}"' in page
    assert "generate.py:" in lrow.source, "source lines from the stack frames are shown"


def test_permutation_is_a_table_with_shapes() -> None:
    result = diff_files(*fixture("param_permutation"))
    view = build_diff_view(result)
    (cause,) = view.causes
    assert cause.kind == "parameter_permutation" and cause.moved_what == "parameter"
    moves = {(m.left_index, m.right_index): m for m in cause.moves}
    assert set(moves) == {(0, 1), (1, 0)}
    assert moves[(0, 1)].left_shape == moves[(0, 1)].right_shape == "f32[8,4]"
    assert all(m.left.href and m.right.href for m in cause.moves)
    page = render_diff_html(result)
    assert '<table class="moves">' in page and "A's parameter" in page


def test_output_permutation_table_says_outputs() -> None:
    view = build_diff_view(diff_files(*fixture("output_permutation")))
    (cause,) = view.causes
    assert cause.moved_what == "output" and len(cause.moves) == 3


def test_identical_pair_says_identical() -> None:
    result = diff_files(*fixture("renumbered"))
    page = render_diff_html(result)
    assert 'class="verdict v-identical"' in page and ">identical<" in page
    assert 'class="cause ' not in page


def test_unpaired_computation_is_shown_as_only_in_one_side() -> None:
    result = diff_files(*fixture("output_added"))
    view = build_diff_view(result)
    only = [s for s in view.sections if s.note]
    assert only and all(s.left is None and s.note == "only in B" for s in only)
    assert_links_land(render_diff_html(result))


# --- large graphs: runs ship as data or are only counted ---------------------------------------------


def test_long_runs_ship_as_data_or_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrunk limits on a real 95-instruction pair exercise every kind of run."""
    monkeypatch.setattr(html_mod, "INLINE_RUN", 4)
    monkeypatch.setattr(html_mod, "LAZY_RUN", 8)
    monkeypatch.setattr(html_mod, "RUN_EDGE", 2)
    monkeypatch.setattr(html_mod, "DATA_BUDGET", 10)
    path = ROOT / "fixtures/torch_xla/kept_alive"
    result = diff_files(str(path / "a.hlo"), str(path / "b.hlo"))
    view = build_diff_view(result, context_lines=1)
    runs = [b for b in all_blocks(view) if isinstance(b, Run)]
    modes = {r.mode for r in runs}
    assert modes == {"inline", "data", "omitted"}, modes
    shipped = sum(len(v["rows"]) for v in view.data.values())
    assert shipped <= 10
    assert any(v["omitted"] for v in view.data.values()), "a long run ships its two ends only"
    page = render_diff_html(result, context_lines=1)
    assert_links_land(page)
    assert_self_contained(page)
    assert "not included in this page" in page


def all_blocks(view: DiffView) -> list[Row | Run]:
    return [b for s in view.sections for c in (s.left, s.right) if c for b in c.blocks]


def test_many_follow_on_changes_are_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_mod, "MAX_CHANGED_SHOWN", 0)
    path = ROOT / "fixtures/torch_xla/ragged_batch"
    result = diff_files(str(path / "a.hlo"), str(path / "b.hlo"))
    view = build_diff_view(result, context_lines=0)
    assert view.folded
    statuses = {b.status for b in all_blocks(view) if isinstance(b, Row)}
    assert "changed" not in statuses and "cause" in statuses
    assert any(isinstance(b, Run) and b.changed for b in all_blocks(view))
    monkeypatch.setattr(html_mod, "MAX_CHANGED_SHOWN", 10_000)
    shown = build_diff_view(result, context_lines=0)
    assert not shown.folded
    assert any(isinstance(b, Row) and b.status == "changed" for b in all_blocks(shown))


# --- escaping -------------------------------------------------------------------------------------


def test_script_json_cannot_end_its_script_element() -> None:
    text = str(script_json({"x": INJECTION + " & \u2028"}))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"x": INJECTION + " & \u2028"}


@pytest.fixture()
def injected(tmp_path: Path) -> tuple[str, str]:
    """A derived file: fixtures/jax/pairs/opcode_change/b.hlo with the op_name of the instruction
    that differs (sin.1) and of one that does not (x.1) replaced by a script-ending string. Made
    here, not a fixture of its own."""
    a, b = fixture("opcode_change")
    text = Path(b).read_text()
    for op_name in ('op_name="jit(step)/sin"', 'op_name="x"'):
        assert op_name in text
        text = text.replace(op_name, f'op_name="{INJECTION}"', 1)
    derived = tmp_path / "b_injected.hlo"
    derived.write_text(text)
    return a, str(derived)


def assert_shown_as_text(page: str) -> None:
    assert "<script>alert" not in page
    assert page.count("</script>") == len(parse(page).scripts) == 2
    assert page.count("<script") == 2


def test_metadata_with_script_tags_is_shown_as_text(injected: tuple[str, str]) -> None:
    result = diff_files(*injected)
    assert any(
        i.metadata and i.metadata.op_name == INJECTION for i in result.right.module.entry.instructions
    ), "the reader kept the string"
    page = render_diff_html(result)
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert_shown_as_text(page)


def test_metadata_with_script_tags_in_the_data_stays_data(
    injected: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(html_mod, "INLINE_RUN", 0)  # every run ships as data, x.1's too
    result = diff_files(*injected)
    page = render_diff_html(result, context_lines=0)
    assert 'id="R-main.1-x.1"' not in page
    assert "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)" in page
    assert_shown_as_text(page)
    data = json.loads(parse(page).data_json)
    assert INJECTION in json.dumps(data, ensure_ascii=False)


# --- the run page ----------------------------------------------------------------------------------

TRAIN = str(ROOT / "tests" / "data" / "train.hlo.txt")  # real save file: steps A A A B A C


@pytest.fixture(scope="module")
def train_report() -> RunReport:
    (log,) = load_runs(TRAIN)
    return build_report(log)


def test_run_page_is_self_contained_and_its_links_land(train_report: RunReport) -> None:
    page = render_report_html(train_report, [recompile_diffs(train_report)])
    assert_self_contained(page)
    assert_links_land(page)
    assert_shown_as_text(page)


def test_run_page_has_a_timeline_with_compiles_linked_to_their_recompiles(train_report: RunReport) -> None:
    page = render_report_html(train_report, [recompile_diffs(train_report)])
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert svg.count("<rect ") >= len({e.variant for e in train_report.timeline})
    assert svg.count("<path ") == train_report.compiles  # one marker per compile
    for r in train_report.recompiles:
        assert f'href="#p0-recompile-{r.sync}"' in svg
        assert f'id="p0-recompile-{r.sync}"' in page


def test_run_page_has_a_diff_section_per_recompile(train_report: RunReport) -> None:
    diffs = recompile_diffs(train_report)
    assert set(diffs) == {r.sync for r in train_report.recompiles}
    ids = set(parse(render_report_html(train_report, [diffs])).ids)
    for r in train_report.recompiles:
        result = diffs[r.sync]
        assert [c.summary for c in result.differences] == [c.summary for c in r.causes]
        left, right = changed_instructions(result.differences)
        for tag, names, canon in (("A", left, result.left), ("B", right, result.right)):
            for name in names:
                anchors = {
                    instruction_anchor(tag, c.name, name, prefix=f"p0-s{r.sync}-")
                    for c in canon.module.computations
                    if name in c.by_name
                }
                assert anchors & ids, (r.sync, tag, name)


def test_recompiles_are_ranked_by_cost_with_their_tensors(train_report: RunReport) -> None:
    first, second = train_report.recompiles
    tensor = TensorRef(7, "f32[]", f"/u/train.py:58 {INJECTION}", (Frame("step", "/u/train.py", 58),))
    attribution = (replace(first.attribution[0], tensors=(tensor,)), *first.attribution[1:])
    report = replace(
        train_report,
        recompiles=(
            replace(first, compile_seconds=0.5, attribution=attribution),
            replace(second, compile_seconds=2.0),
        ),
    )
    view, _ = build_run_view(report, recompile_diffs(report))
    assert [v.recompile.sync for v in view.recompiles] == [second.sync, first.sync]
    assert [v.rank for v in view.recompiles] == [1, 2] and view.timed
    (shown,) = view.recompiles[1].tensors
    assert (shown.id, shown.shape) == (7, "f32[]")
    page = render_report_html(report, [recompile_diffs(report)])
    table = page[page.index('class="recompiles"') :]
    assert table.index(f'<td class="num">{second.sync}</td>') < table.index(
        f'<td class="num">{first.sync}</td>'
    )
    assert "2.00 s" in page and "live tensors implicated" in page
    assert_shown_as_text(page)
    assert_links_land(page)


def test_run_page_of_several_processes_keeps_ids_unique(train_report: RunReport) -> None:
    processes = (replace(train_report, process="rank0"), replace(train_report, process="rank1"))
    page = render_report_html(processes, [recompile_diffs(p) for p in processes])
    assert_links_land(page)  # also asserts every id is unique
    assert 'id="p1-recompile-3"' in page and "rank1" in page


# --- CLI -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "code"), [("constant_change", 1), ("renumbered", 0)])
def test_cli_writes_the_page_and_keeps_the_exit_code(tmp_path: Path, name: str, code: int) -> None:
    out = tmp_path / "diff.html"
    res = CliRunner().invoke(xlagraph, ["diff", *fixture(name), "--html", str(out)])
    assert res.exit_code == code, res.output
    assert res.output == f"wrote {out}\n"  # not a terminal: no open command
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert_self_contained(page)


def test_cli_html_with_json_keeps_stdout_json(tmp_path: Path) -> None:
    out = tmp_path / "diff.html"
    res = CliRunner().invoke(xlagraph, ["diff", *fixture("constant_change"), "--json", "--html", str(out)])
    assert res.exit_code == 1
    assert json.loads(res.stdout)["verdict"] == "different"
    assert f"wrote {out}" in res.stderr
    assert out.exists()


def test_cli_unwritable_output_is_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "missing-dir" / "diff.html"
    res = CliRunner().invoke(xlagraph, ["diff", *fixture("constant_change"), "--html", str(out)])
    assert res.exit_code == 2
    assert "cannot write" in res.stderr


def test_cli_report_writes_the_run_page(tmp_path: Path) -> None:
    out = tmp_path / "run.html"
    res = CliRunner().invoke(xlagraph, ["report", TRAIN, "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert res.output == f"wrote {out}\n"
    page = out.read_text()
    assert_self_contained(page)
    assert_links_land(page)
    assert page.count('class="recompile"') == 2
