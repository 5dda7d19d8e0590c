"""Output that agrees with itself (issue 23): counts, paths, rankings and pointers that say the same
thing wherever a command prints them. Inputs are the real fixtures the README's examples use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from xlagraph.cli.main import xlagraph

ROOT = Path(__file__).resolve().parents[1]
TORCH_XLA = ROOT / "fixtures" / "torch_xla"
DUMP = str(TORCH_XLA / "kept_alive" / "xla_dump")  # 3 compiles, each before and after optimizations


def run(*args: str) -> Result:
    return CliRunner().invoke(xlagraph, list(args))


# --- help -----------------------------------------------------------------------------------------


def test_top_level_help_names_report_first() -> None:
    out = run("--help").stdout
    assert out.index("xlagraph report SRC") < out.index("xlagraph graphs") < out.index("xlagraph diff")


def test_diff_help_says_exit_1_is_different_or_undetermined() -> None:
    out = " ".join(run("diff", "--help").stdout.split())
    assert "1 different or undetermined" in out


# --- graphs on a --xla_dump_to folder: a compile is one row ----------------------------------------


def test_dump_folder_counts_compiles_not_stage_files() -> None:
    result = run("graphs", DUMP)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert (
        "3 compiles (6 graphs: each compile at every stage it was dumped), 3 unique (variants A, B, C)"
        in lines
    )
    rows = lines[1:4]  # the header, one row per compile, the closing lines
    assert all("before_optimizations" in r and "after_optimizations" in r for r in rows)
    assert not any("_optimizations" in line for line in lines[4:])
    doc = json.loads(run("graphs", DUMP, "--json").stdout)
    assert doc["compiles"] == doc["unique"] == 3 and len(doc["modules"]) == 6
    assert [m["compile"] for m in doc["modules"]] == [0, 0, 1, 1, 2, 2]
    assert [m["variant"] for m in doc["modules"]] == ["A", "A", "B", "B", "C", "C"]


def test_diff_across_stages_of_one_compile_says_so() -> None:
    result = run("diff", DUMP + "#0", DUMP + "#1")
    assert result.exit_code == 1  # they do differ: never `identical`
    out = " ".join(result.stdout.split())
    assert result.stdout.startswith("different: one compile at two stages (no recompile)")
    assert "A and B are one compile (module_0000) at two stages" in out
    assert "structure" not in out and "conditional_work" not in out
    doc = json.loads(run("diff", DUMP + "#0", DUMP + "#1", "--json").stdout)
    assert doc["one_compile"].startswith("A and B are one compile")
    other = json.loads(run("diff", DUMP + "#0", DUMP + "#2", "--json").stdout)
    assert other["one_compile"] == "" and other["causes"]  # two compiles: the causes stand


def test_graphs_on_a_capture_folder_points_to_report() -> None:
    src = str(TORCH_XLA / "two_runs" / "capture")
    result = run("graphs", src)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"xlagraph: error: {src}: a capture folder, not a --xla_dump_to directory: "
        f"`xlagraph report {src}` explains its recompiles and lists its graphs"
    )


# --- stored captures keep their HLO compressed: read it as text ---------------------------------------


CORPUS = TORCH_XLA / "corpus" / "captures"


def test_report_reads_a_corpus_capture_whose_hlo_is_xz() -> None:
    src = CORPUS / "ho_gpt2_clip_every_k"
    assert not list((src / "hlo").glob("*.txt")) and list((src / "hlo").glob("*.txt.xz"))
    result = run("report", str(src))
    assert result.exit_code == 0, result.output
    assert "not kept" not in result.stdout and "listed in the journal but missing" not in result.stdout
    assert "conditional_work: gradient clipping runs only on some steps" in result.stdout


def test_compressed_hlo_diffs_as_its_text(tmp_path: Path) -> None:
    import gzip
    import lzma

    pair = TORCH_XLA / "kept_alive"
    a, b = (pair / "a.hlo").read_bytes(), (pair / "b.hlo").read_bytes()
    (tmp_path / "a.hlo.xz").write_bytes(lzma.compress(a))
    (tmp_path / "b.hlo.gz").write_bytes(gzip.compress(b))
    plain = json.loads(run("diff", str(pair / "a.hlo"), str(pair / "b.hlo"), "--json").stdout)
    packed = json.loads(run("diff", str(tmp_path / "a.hlo.xz"), str(tmp_path / "b.hlo.gz"), "--json").stdout)
    assert [c["kind"] for c in packed["causes"]] == [c["kind"] for c in plain["causes"]]
    (tmp_path / "cut.hlo.xz").write_bytes(lzma.compress(a)[:200])
    result = run("graphs", str(tmp_path / "cut.hlo.xz"))
    assert result.exit_code == 2 and result.stderr.strip().endswith("cut.hlo.xz: truncated .xz file")


# --- the HTML diff page: the header and the panels count the same instructions ------------------------


def test_html_header_and_panels_say_what_they_count() -> None:
    import re

    from xlagraph.diff import diff_files
    from xlagraph.render.html_diff import render_diff_html

    pair = TORCH_XLA / "fsdp_bucket"
    result = diff_files(str(pair / "a.hlo"), str(pair / "b.hlo"))
    page = render_diff_html(result)
    for side in (result.left.module, result.right.module):
        total, entry = side.instruction_count, len(side.entry.instructions)
        assert total > entry  # the pair that showed 310 against 289
        header = f"{total} instructions in {len(side.computations)} computations ({entry} in the entry)"
        assert header in page
        assert f"{entry} instructions of the module's {total}<" in page
    # every panel count names the module total it is part of
    panels = re.findall(r'<span class="count">([\d,]+ instructions[^<]*)</span>', page)
    assert panels and all("of the module's" in p for p in panels)


# --- the report: what to fix first, expected warm-up apart --------------------------------------------

# Adam's state created at step 1 (state_init, expected, 18 s of compile) and clipping every k steps
# (conditional_work, the bug, 23 s): a real capture of the corpus.
CLIP = str(CORPUS / "ho_gpt2_clip_every_k")


def test_text_report_lists_the_bug_before_the_expected_warm_up() -> None:
    out = run("report", CLIP).stdout
    assert "2 recompiles (1 to fix, 1 expected) explained below" in " ".join(out.split())
    bug = out.index("recompile 1/2: graph C")
    heading = out.index("expected recompiles (warm-up: nothing to fix):")
    warm = out.index("recompile 2/2: graph B")
    assert bug < heading < warm
    assert "cause   conditional_work: 1" in out and "state_init (expected): 1" in out
    assert out.index("conditional_work: 1") < out.index("state_init (expected): 1")


def test_json_report_orders_recompiles_to_fix_first() -> None:
    doc = json.loads(run("report", CLIP, "--json").stdout)
    assert [(r["variant"], r["expected"]) for r in doc["recompiles"]] == [("C", False), ("B", True)]
    assert [(c["kind"], c["expected"]) for c in doc["ranking"]["causes"]] == [
        ("conditional_work", False),
        ("state_init", True),
    ]


def test_html_report_ranks_the_bug_first_and_greys_the_warm_up(tmp_path: Path) -> None:
    import re

    page = tmp_path / "report.html"
    assert run("report", CLIP, "--html", str(page)).exit_code == 0
    html = page.read_text()
    table = html[html.index('<table class="recompiles">') : html.index("</table>", html.index("recompiles"))]
    assert table.index("conditional_work") < table.index("expected (warm-up): nothing to fix")
    assert table.index("expected (warm-up)") < table.index("state_init")
    marks = {sync: colour for colour, sync in re.findall(r'fill="(#[0-9a-f]+)"><title>sync (\d+)', html)}
    assert marks == {"0": "#667085", "1": "#667085", "3": "#c9372c"}  # red only for the bug
    assert html.index("#1: graph C") < html.index("#2: graph B")


# --- steps: an evaluation pass synced in the loop is not a step of its own ----------------------------


def test_an_evaluation_pass_synced_in_the_loop_is_not_counted_as_a_step(tmp_path: Path) -> None:
    """2 epochs of 3 steps, each epoch closed by `validate()` with its own `xm.mark_step()`."""
    src = str(CORPUS / "hz_mha_keypad_epoch_eval")
    doc = json.loads(run("report", src, "--json").stdout)
    assert (doc["syncs"], doc["steps"], doc["side_steps"]) == (8, 6, 2)
    out = " ".join(run("report", src).stdout.split())
    assert "in 8 syncs, 6 steps (and 2 synced at lines of their own: evaluation passes, not steps)" in out
    page = tmp_path / "run.html"
    assert run("report", src, "--html", str(page)).exit_code == 0
    assert "8 syncs, 6 steps (and 2 synced at a line of their own: not steps)" in page.read_text()
    clip = json.loads(run("report", CLIP, "--json").stdout)  # one marker: every step is one
    assert (clip["syncs"], clip["steps"], clip["side_steps"]) == (8, 8, 0)


# --- the README's 60-second example prints what the README shows ---------------------------------------

README = ROOT / "README.md"
SAVE = "fixtures/torch_xla/kept_alive/save_hlo.txt"


# Fixtures made before paths were stored relative to their root embed the making machine's checkout.
def _readme_block(command: str) -> list[str]:
    text = README.read_text()
    start = text.index(f"$ {command}\n") + len(f"$ {command}\n")
    return text[start : text.index("```", start)].splitlines()


def test_readme_sixty_second_example_is_verbatim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    shown = _readme_block(f"xlagraph report {SAVE}")
    result = run("report", SAVE)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == shown


def test_readme_diff_example_is_verbatim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    a, b = "fixtures/torch_xla/fsdp_bucket/a.hlo", "fixtures/torch_xla/fsdp_bucket/b.hlo"
    shown = _readme_block(f"xlagraph diff {a} {b}")
    assert shown[-1] == "..."  # the changed-instruction list is left out
    result = run("diff", a, b)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[: len(shown) - 1] == shown[:-1]


def test_readme_stays_short_and_links_its_pages() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    pages = ("accuracy", "json", "capture-settings", "ranks", "conformance", "performance", "development")
    for page in pages:
        assert f"(docs/{page}.md)" in text and (ROOT / "docs" / f"{page}.md").is_file()


# --- one way to name a file: the summary, `at`, the stack and the HTML agree ----------------------------


def _prefixes(text: str, script: str) -> set[str]:
    import re

    return set(re.findall(rf"([^\s(`'\"<>]*){re.escape(script)}:\d+", text))


def test_a_script_is_named_one_way_in_text_and_html(tmp_path: Path) -> None:
    import re

    script = "ho_gpt2_clip_every_k.py"
    text = run("report", CLIP).stdout
    page = tmp_path / "run.html"
    assert run("report", CLIP, "--html", str(page)).exit_code == 0
    assert len(_prefixes(text, script)) == 1, _prefixes(text, script)
    # instruction rows label their source with the file name alone (`"src"`), the stack in full
    html = re.sub(r'"src":"[^"]*"', "", page.read_text())
    assert _prefixes(html, script) == _prefixes(text, script)
    # a cause's summary names the user's `if` line as its `at` line does
    diff = run("diff", DUMP + "#0", DUMP + "#2").stdout
    assert len(_prefixes(diff, "kept_alive.py")) == 1, _prefixes(diff, "kept_alive.py")


def test_sources_are_the_users_lines_only() -> None:
    """Optimizer state created inside torch.optim: no line of the user's, so no `at` and no `sources`."""
    doc = json.loads(run("diff", DUMP + "#0", DUMP + "#2", "--json").stdout)
    state = next(c for c in doc["causes"] if c["kind"] == "state_init")
    assert state["sources"] == [] and any("torch/optim/" in s for s in state["library_sources"])
    removed = next(c for c in doc["causes"] if c["kind"] == "output_removed")
    assert [s.rsplit("/", 1)[-1] for s in removed["sources"]] == ["kept_alive.py:31"]
    text = run("diff", DUMP + "#0", DUMP + "#2").stdout
    block = text[text.index("state_init") : text.index("output_removed")]
    assert "\n  at " not in block and "\n  via   torch/optim/sgd.py" in block
