"""The HTML diff page in a real headless Chromium (Debian's `chromium`, driven by Playwright).

Nothing is downloaded: Playwright launches the system browser (`CHROMIUM`, default
/usr/bin/chromium) with networking features off. Pages are opened from file:// URLs, as a user
opens a bug-report attachment. Also writes docs/screenshot-diff.png (shown in the README) and
prints the size and load time of the page of the 120K-instruction benchmark pair.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from xlagraph.diff import diff_files, diff_modules
from xlagraph.parse.sources import load_module, replace_label
from xlagraph.render.html_diff import render_diff_html
from xlagraph.render.html_report import render_report_html
from xlagraph.report import build_report, load_runs
from xlagraph.report.diffs import recompile_diffs

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# CI (.ci/run) sets XLAGRAPH_REQUIRE_BROWSER=1: there a missing Chromium fails, never skips.
REQUIRED = os.environ.get("XLAGRAPH_REQUIRE_BROWSER") == "1"
if not os.access(CHROMIUM, os.X_OK) and not REQUIRED:
    pytest.skip(
        f"no Chromium at {CHROMIUM} (the HTML page test needs one; install it with "
        "`sudo apt-get install chromium`, or set CHROMIUM=/path/to/chrome)",
        allow_module_level=True,
    )
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOT = ROOT / "docs" / "screenshot-diff.png"
BENCH = ROOT / "benchmarks" / "_data"
VIEWPORT = {"width": 1440, "height": 900}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def write_page(tmp: Path, name: str, a: Path, b: Path, context_lines: int = 3) -> Path:
    """The diff page of a fixture pair, labelled with paths relative to the repository."""
    left, right = (replace_label(load_module(str(p)), str(p.relative_to(ROOT))) for p in (a, b))
    out = tmp / f"{name}.html"
    out.write_text(render_diff_html(diff_modules(left, right), context_lines=context_lines))
    return out


def open_page(browser: Browser, path: Path) -> tuple[Page, list[str]]:
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    page.on("request", lambda r: None if r.url.startswith(("file://", "data:")) else errors.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_selector("html[data-ready='1']")
    return page, errors


def in_view(page: Page, element_id: str) -> bool:
    """The element is inside the window and inside the visible part of its scrolling pane."""
    return page.evaluate(
        """id => {
            const n = document.getElementById(id);
            if (!n || n.offsetParent === null) return false;
            const r = n.getBoundingClientRect();
            const pane = n.closest('.pane');
            const p = pane ? pane.getBoundingClientRect() : {top: 0, bottom: innerHeight};
            return r.top >= Math.max(p.top, 0) - 1 && r.bottom <= Math.min(p.bottom, innerHeight) + 1;
        }""",
        element_id,
    )


def highlighted(page: Page) -> list[str]:
    return page.eval_on_selector_all(".hl", "ns => ns.map(n => n.id)")


def pair(name: str) -> tuple[Path, Path]:
    base = ROOT / "fixtures" / name
    return base / "a.hlo", base / "b.hlo"


def test_cause_link_highlights_the_counterpart_and_scrolls_it_into_view(
    browser: Browser, tmp_path: Path
) -> None:
    path = write_page(tmp_path, "ragged", *pair("torch_xla/ragged_batch"))
    page, errors = open_page(browser, path)
    link = page.locator(".cause a.ins[href^='#L-']").first
    target = link.get_attribute("href")[1:]
    counterpart = page.get_attribute(f"[id='{target}']", "data-cp-href")[1:]
    assert counterpart.startswith("R-")
    page.evaluate("window.scrollTo(0, 0)")
    link.click()
    lit = highlighted(page)
    assert target in lit and counterpart in lit
    assert "hl" in page.get_attribute(f"[id='{counterpart}']", "class").split()
    assert in_view(page, target) and in_view(page, counterpart)
    assert page.evaluate("location.hash") == f"#{target}"
    assert not errors, errors
    SCREENSHOT.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 10_000


def test_clicking_an_instruction_jumps_to_its_counterpart(browser: Browser, tmp_path: Path) -> None:
    path = write_page(tmp_path, "structure", *pair("jax/pairs/structure"))
    page, errors = open_page(browser, path)
    page.click("#R-main\\.1-div\\.1 .code")
    assert set(highlighted(page)) == {"R-main.1-div.1", "L-main.1-tanh.1"}
    page.click("#L-main\\.1-tanh\\.1 a.nm")
    assert set(highlighted(page)) == {"R-main.1-div.1", "L-main.1-tanh.1"}
    assert in_view(page, "R-main.1-div.1")
    assert not errors, errors


def test_operand_link_goes_to_its_definition_inside_a_collapsed_run(browser: Browser, tmp_path: Path) -> None:
    # No context: most operands are defined in collapsed runs, which must open on the jump.
    path = write_page(tmp_path, "kept", *pair("torch_xla/kept_alive"), context_lines=0)
    page, errors = open_page(browser, path)
    operand = page.locator(".pane > .row a.opnd").first
    href, ref = operand.get_attribute("href"), operand.get_attribute("data-ref")
    target = ref or href[1:]
    hidden_before = page.evaluate(
        "id => { const n = document.getElementById(id); return !n || !n.offsetParent }", target
    )
    operand.click()
    assert target in highlighted(page)
    assert in_view(page, target)
    assert hidden_before, "the definition was inside a collapsed run"
    assert not errors, errors


def test_collapsed_runs_expand_and_collapse(browser: Browser, tmp_path: Path) -> None:
    path = write_page(tmp_path, "kept", *pair("torch_xla/kept_alive"), context_lines=0)
    page, errors = open_page(browser, path)
    for mode in ("inline", "data"):
        closed = page.locator(f".run.mode-{mode}:not(.open)").first
        assert closed.count() == 1, mode
        run = page.locator(f"[id='{closed.get_attribute('id')}']")
        label = run.locator(".run-toggle").inner_text()
        count = int(label.split()[1].replace(",", ""))
        run.locator(".run-toggle").click()
        rows = run.locator(":scope > .run-rows > .row")
        assert rows.count() == count, (mode, label)
        assert rows.first.is_visible()
        # Rows built from data behave like the others: a click selects them and their counterpart.
        rows.first.locator(".code").click()
        assert rows.first.get_attribute("id") in highlighted(page)
        run.locator(".run-toggle").click()
        assert not rows.first.is_visible()
    assert not errors, errors


def test_a_shared_link_to_a_row_not_built_yet_opens_it(browser: Browser, tmp_path: Path) -> None:
    path = write_page(tmp_path, "kept", *pair("torch_xla/kept_alive"), context_lines=0)
    page, _ = open_page(browser, path)
    built = set(page.eval_on_selector_all(".row[id]", "ns => ns.map(n => n.id)"))
    data = page.evaluate("JSON.parse(document.getElementById('xg-data').textContent).runs")
    target = next(r["i"] for run in data.values() for r in run["rows"] if r["i"] not in built)
    page.close()
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{path.as_uri()}#{target}")
    page.wait_for_selector("html[data-ready='1']")
    assert target in highlighted(page)
    assert in_view(page, target)


def test_run_page_compile_marker_jumps_to_its_recompile(browser: Browser, tmp_path: Path) -> None:
    (log,) = load_runs(str(ROOT / "tests" / "data" / "train.hlo.txt"))
    report = build_report(log)
    path = tmp_path / "run.html"
    path.write_text(render_report_html(report, [recompile_diffs(report)]))
    page, errors = open_page(browser, path)
    last = report.recompiles[-1]
    page.locator(f".timeline svg a[href='#p0-recompile-{last.sync}'] path").click()
    assert page.evaluate("location.hash") == f"#p0-recompile-{last.sync}"
    top = page.evaluate(f"document.getElementById('p0-recompile-{last.sync}').getBoundingClientRect().top")
    assert -1 <= top < VIEWPORT["height"] / 2  # sub-pixel rounding after smooth scrolling
    # The diff inside the section works like the diff page: a cause link selects both sides.
    link = page.locator(f"#p0-recompile-{last.sync} .cause a.ins").first
    link.click()
    assert highlighted(page), "the cause's instruction is highlighted"
    assert not errors, errors


def ensure_benchmark_pair() -> tuple[Path, Path]:
    a, b = BENCH / "transformer_120k_a.hlo", BENCH / "transformer_120k_b.hlo"
    if not (a.exists() and b.exists()):  # gitignored: generate it (torch_xla tracing, ~10 s)
        cmd = [sys.executable, str(ROOT / "benchmarks" / "generate.py"), "--sizes", "120k"]
        subprocess.run(cmd, check=True, cwd=ROOT)
    return a, b


def test_page_of_a_120k_instruction_pair_opens_and_responds(browser: Browser, tmp_path: Path) -> None:
    a, b = ensure_benchmark_pair()
    started = time.perf_counter()
    result = diff_files(str(a), str(b))
    diffed = time.perf_counter()
    text = render_diff_html(result)
    rendered = time.perf_counter()
    path = tmp_path / "transformer_120k.html"
    path.write_text(text)
    size = path.stat().st_size

    opened = time.perf_counter()
    page, errors = open_page(browser, path)
    loaded = time.perf_counter() - opened
    nav = page.evaluate("performance.getEntriesByType('navigation')[0].toJSON()")
    rows = page.locator(".row[id]").count()
    assert rows > 0 and page.locator(".cause").count() == len(result.causes)
    assert page.locator(".cause:not(.info)").count() == len(result.differences)

    clicked = time.perf_counter()
    page.locator(".cause a.ins").first.click()
    click_s = time.perf_counter() - clicked
    assert len(highlighted(page)) >= 1

    run = page.locator(".run.mode-data").first
    expanding = time.perf_counter()
    run.locator(".run-toggle").click()
    run.locator(":scope > .run-rows > .row").first.wait_for()
    expand_s = time.perf_counter() - expanding
    assert not errors, errors

    instructions = result.left.module.instruction_count + result.right.module.instruction_count
    print(
        f"\n120K pair ({instructions:,} instructions): diff {diffed - started:.2f} s, "
        f"render {rendered - diffed:.2f} s, page {size / 1e6:.2f} MB, {rows} rows in the page; "
        f"browser load {loaded:.2f} s (DOMContentLoaded {nav['domContentLoadedEventEnd']:.0f} ms, "
        f"load event {nav['loadEventEnd']:.0f} ms), cause click {click_s * 1000:.0f} ms, "
        f"run expand {expand_s * 1000:.0f} ms"
    )


def test_run_page_rank_strip_shows_where_ranks_diverge(browser: Browser, tmp_path: Path) -> None:
    # Real 4-rank torchrun captures (fixtures/torch_xla/ranks): rank 0 logs, so it runs other graphs.
    from xlagraph.report.ranks import rank_view

    logs = load_runs(str(ROOT / "fixtures" / "torch_xla" / "ranks" / "log_rank0" / "capture"))
    path = tmp_path / "ranks.html"
    reports = [build_report(log) for log in logs]
    path.write_text(render_report_html(reports, [recompile_diffs(r) for r in reports], ranks=rank_view(logs)))
    page, errors = open_page(browser, path)
    strip = page.locator("table.rank-strip")
    assert strip.is_visible()
    assert strip.locator("tbody tr").count() == 4  # one row per rank
    divergent = strip.locator("td.divergent")
    assert divergent.count() >= 1 and divergent.first.is_visible()
    colors = {c.get_attribute("style") for c in strip.locator("tbody td").all()}
    assert len(colors) >= 2, colors  # ranks running other graphs are told apart by colour
    assert "diverge" in page.locator("section.ranks-view h2").inner_text()
    assert not errors, errors
