"""docs/example.ipynb, executed headless (nbclient, an IPython kernel) as CI runs it, then its HTML
outputs shown together in one page in headless Chromium, as a notebook front end shows them: each
output finds its own data, its links and clicks stay inside it, and nothing is fetched.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from playwright.sync_api import Browser, Page, sync_playwright

from tests.conftest import ROOT
from tests.test_html_browser import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, highlighted

NOTEBOOK = ROOT / "docs" / "example.ipynb"


@pytest.fixture(scope="module")
def executed() -> Any:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    return nb


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def outputs(nb: Any, kind: str) -> list[str]:
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if kind == "stream" and out.output_type == "stream":
                found.append(out.text)
            elif kind in out.get("data", {}):
                found.append(out.data[kind])
    return found


def test_notebook_runs_and_says_what_the_cli_says(executed: Any) -> None:
    errors = [o for c in executed.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    text = "".join(outputs(executed, "stream"))
    assert "1 recompile explained" in text  # print(report): the report's first lines
    assert "graph B at step 3 vs A: ('parameter_shape',)" in text
    assert "p2.4 -> p2.4: shape f32[4,8] -> f32[3,8]" in text
    # The networkx query: the changed input, and the weight and step size it meets downstream.
    assert re.search(r"parameter 2 \(p2\.4, f32\[3,8\]", text)
    assert re.search(r"parameter 1 \(p1\.3, f32\[8,8\]", text)
    pages = outputs(executed, "text/html")
    assert len(pages) == 3  # the report, the diff, the module
    assert all(p.startswith('<div class="xlagraph" id="xg') for p in pages)
    assert outputs(executed, "text/plain")[1].startswith("different: 1 cause")  # the diff's repr


def notebook_page(tmp_path: Path, nb: Any, browser: Browser) -> tuple[Page, list[str]]:
    """The notebook's HTML outputs one after the other in one page, as a front end inserts them."""
    cells = "\n".join(f'<div class="output">{html}</div>' for html in outputs(nb, "text/html"))
    path = tmp_path / "notebook.html"
    path.write_text(
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n{cells}\n</body></html>\n'
    )
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: None if r.url.startswith(("file://", "data:")) else errors.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_function("document.querySelectorAll('.xlagraph[data-ready=\"1\"]').length === 3")
    return page, errors


def test_notebook_outputs_work_side_by_side_in_chromium(
    executed: Any, browser: Browser, tmp_path: Path
) -> None:
    page, errors = notebook_page(tmp_path, executed, browser)
    ids = page.eval_on_selector_all("[id]", "ns => ns.map(n => n.id)")
    assert len(ids) == len(set(ids)), "an id repeats across the outputs"
    report, diff, module = page.eval_on_selector_all(".xlagraph", "ns => ns.map(n => n.id)")
    # The diff's cause links its instruction in A; clicking it lights that row and its counterpart in B.
    link = page.locator(f"#{diff} .cause a.ins[href^='#{diff}-L-']").first
    target = link.get_attribute("href")[1:]
    counterpart = page.get_attribute(f"[id='{target}']", "data-cp-href")[1:]
    assert counterpart.startswith(f"{diff}-R-")
    link.click()
    lit = highlighted(page)
    assert target in lit and counterpart in lit
    assert page.locator(f"#{report} .hl").count() == 0, "a click in one output lights nothing in another"
    # The report's recompile carries the same diff, with ids of its own: its link works the same.
    inner = page.locator(f"#{report} .recompile .cause a.ins").first
    inner_target = inner.get_attribute("href")[1:]
    assert not inner_target.startswith(diff)
    inner.click()
    assert inner_target in highlighted(page)
    own = page.eval_on_selector_all(f"#{diff} .hl", "ns => ns.map(n => n.id)")
    assert set(own) == {target, counterpart}, "each output keeps its own selection"
    # Rows of a collapsed run are built from the output's own data.
    toggle = page.locator(
        f"#{diff} .run.mode-inline:not(.open) .run-toggle, #{diff} .run.mode-data .run-toggle"
    )
    if toggle.count():
        toggle.first.click()
        assert page.locator(f"#{diff} .run.open .run-rows > .row").count() > 0
    assert page.locator(f"#{module} table.recompiles tr").count() == 3  # header, entry, one callee
    # The notebook's own page keeps its look: the fragments' stylesheets are scoped to them.
    assert page.evaluate("getComputedStyle(document.body).margin") != "0px"
    assert not errors, errors
