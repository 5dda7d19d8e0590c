"""How the API's `Module`, `Diff` and `Report` show themselves in Jupyter: HTML fragments, the
content of the CLI's pages built by the same builders (`build_diff_view`, `build_run_view`) and
templates (what a fragment promises: docs/api.md, "In a notebook"). Built from the engine's results
and, for a module, from anything with a module's identity (`ModuleIdentity`), so that rendering
never imports the API that calls it. Ids take the builders' `prefix` / `n` (`xg3-`, `p7-`), the
stylesheet is scoped to the fragment's root (`:root` -> `#xg3`), and the page's script runs
unchanged inside a function that hands it a `document` limited to the root."""

from __future__ import annotations

import itertools
import re
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

from jinja2 import Environment
from markupsafe import Markup

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from xlagraph.diff import DiffResult
    from xlagraph.ir import Module
    from xlagraph.report.model import RunReport
    from xlagraph.report.ranks import RankView

__all__ = ["ModuleIdentity", "diff_html", "module_html", "report_html", "scope_css"]

MAX_HEIGHT = 720  # px of a cell the fragment takes at most; it scrolls inside
_COUNTER = itertools.count(1)  # fragment numbers, unique within the process (the kernel)

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_WHOLE_PAGE = frozenset({":root", "html", "body"})


# --- the stylesheet, scoped ------------------------------------------------------------------------


def _scope_selector(selector: str, scope: str) -> str:
    selector = selector.strip()
    if selector in _WHOLE_PAGE:
        return scope
    return f"{scope} {selector}"


def scope_css(css: str, scope: str) -> str:
    """Every rule of `css` limited to the elements under `scope` (a selector); `:root`, `html`
    and `body` become `scope` itself, `@media` blocks are scoped inside.

    >>> scope_css(":root { --a: 1; } h1, .x b { color: red; } @media (x) { body { margin: 0; } }", "#r")
    '#r { --a: 1; }\\n#r h1, #r .x b { color: red; }\\n@media (x) {\\n#r { margin: 0; }\\n}'
    """
    css = _COMMENT.sub("", css)
    out: list[str] = []
    i = 0
    while True:
        start = css.find("{", i)
        if start < 0:
            break
        head = css[i:start].strip()
        depth, j = 1, start + 1
        while depth and j < len(css):
            depth += {"{": 1, "}": -1}.get(css[j], 0)
            j += 1
        body = css[start + 1 : j - 1]
        if head.startswith("@media") or head.startswith("@supports"):
            out.append(f"{head} {{\n{scope_css(body, scope)}\n}}")
        elif head.startswith("@"):
            out.append(f"{head} {{{body}}}")
        else:
            selectors = ", ".join(_scope_selector(s, scope) for s in head.split(","))
            out.append(f"{selectors} {{{body}}}")
        i = j
    return "\n".join(out)


# --- the script, confined ------------------------------------------------------------------------

_SHIM = """(function () {
  var root = document.getElementById(%(root)s);
  if (!root || root.getAttribute("data-ready")) return;
  var data = root.querySelector("script.xg-data");
  var doc = {
    getElementById: function (id) {
      return id === "xg-data" ? data : root.querySelector("#" + CSS.escape(id));
    },
    createElement: function (tag) { return document.createElement(tag); },
    createTextNode: function (text) { return document.createTextNode(text); },
    createDocumentFragment: function () { return document.createDocumentFragment(); },
    addEventListener: function (type, fn) { root.addEventListener(type, fn); },
    documentElement: root
  };
  var win = {
    innerHeight: window.innerHeight,
    getSelection: function () { return window.getSelection(); },
    scrollBy: function () {},
    addEventListener: function () {}
  };
  (function (document, window, location, history) {
%(js)s
  })(doc, win, { hash: "" }, undefined);
})();"""


@lru_cache(maxsize=1)
def _assets() -> tuple[str, str]:
    files = resources.files("xlagraph.templates")
    return (
        files.joinpath("xlagraph.css").read_text(encoding="utf-8"),
        files.joinpath("xlagraph.js").read_text(encoding="utf-8"),
    )


def _environment() -> Environment:
    # The pages' own environment: the same templates, filters and settings.
    from xlagraph.render.html_common import environment

    return environment()


def _fragment(root: str, body: str, runs: dict[str, Any]) -> str:
    """`body` in a scoped, scrolling box with the pages' stylesheet, data and script."""
    from xlagraph.render.html_common import page_data

    css, js = _assets()
    data = page_data(runs)
    scope = f"#{root}"
    frame = (
        f"{scope} {{ max-height: {MAX_HEIGHT}px; overflow: auto; padding: 4px 8px; "
        "border: 1px solid var(--line); border-radius: 6px; }\n"
        f"{scope} .pane {{ max-height: {MAX_HEIGHT // 2}px; }}"
    )
    shim = _SHIM % {"root": f'"{root}"', "js": js}
    return (
        f'<div class="xlagraph" id="{root}">\n<style>\n{scope_css(css, scope)}\n{frame}\n</style>\n'
        f'{body}\n<script type="application/json" class="xg-data">{data}</script>\n'
        f"<script>\n{shim}\n</script>\n</div>"
    )


def diff_html(result: DiffResult) -> str:
    """The diff page's content (verdict, causes, computations side by side) as a fragment."""
    from xlagraph.render.html_diff import build_diff_view

    root = f"xg{next(_COUNTER)}"
    view = build_diff_view(result, prefix=f"{root}-")
    macro = _environment().get_template("_diff.html").module.diff_section  # type: ignore[attr-defined]
    return _fragment(root, str(macro(view)), view.data)


def report_html(
    processes: tuple[RunReport, ...], diffs: Sequence[Mapping[int, DiffResult]], ranks: RankView | None
) -> str:
    """The run page's content (per process: timeline, ranked recompiles, each one's diff from
    `diffs`, per process by sync; the rank view) as a fragment."""
    from xlagraph.render.html_diff import DATA_BUDGET
    from xlagraph.render.html_report import PALETTE, ReportPage, build_run_view
    from xlagraph.render.ranks_html import ranks_html

    root = f"xg{next(_COUNTER)}"
    budget = [DATA_BUDGET]
    runs, data = [], {}
    for process, shown_diffs in zip(processes, diffs, strict=True):  # ids start with their `p<n>-`
        view, shipped = build_run_view(process, shown_diffs, next(_COUNTER), budget=budget)
        runs.append(view)
        data.update(shipped)
    shown = ranks_html(ranks, PALETTE) if ranks is not None else None
    page = ReportPage("", tuple(runs), Markup(""), Markup(""), Markup(""), shown)
    template = _environment().get_template("report.html")
    body = "".join(template.blocks["main"](template.new_context({"page": page})))
    ranks_id = '<section class="ranks-view" id="ranks">'  # the one fixed id of the pages' templates
    body = body.replace(ranks_id, ranks_id.replace('"ranks"', f'"{root}-ranks"'))
    return _fragment(root, body, data)


_MODULE = """
<section class="verdict"><h2 class="headline">{{ m.name }}</h2>
<table class="modules"><tr>
<td class="label"><code>{{ m.label }}</code></td><td>{{ m.format }}</td>
<td class="num">{{ m.instruction_count|grouped }} instructions,
 {{ n|grouped }} computation{{ "s" if n != 1 }}</td>
<td>fingerprint <code>{{ m.fingerprint }}</code></td>
<td>{% if m.graph_hash %}graph hash <code>{{ m.graph_hash }}</code>{% endif %}</td>
</tr></table></section>
<table class="recompiles"><thead><tr>
<th>computation</th><th class="num">instructions</th><th>root</th><th class="num">parameters</th>
</tr></thead><tbody>
{% for c in computations %}<tr id="{{ root }}-c{{ loop.index0 }}">
<td><code>{{ c.name }}</code>{% if c.is_entry %} <b>ENTRY</b>{% endif %}</td>
<td class="num">{{ c.instructions|length|grouped }}</td>
<td><code>{{ c.root.opcode }}</code> <code>{{ c.root.shape }}</code></td>
<td class="num">{{ c.parameters|length }}</td></tr>
{% endfor %}</tbody></table>
{% if more %}<p class="more">and {{ more|grouped }} more computations</p>{% endif %}"""
MAX_COMPUTATIONS = 60  # rows of a module's table of computations


class ModuleIdentity(Protocol):
    """What a module's fragment shows: the API's `Module` (xlagraph.api) is one."""

    @property
    def name(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def format(self) -> str: ...
    @property
    def instruction_count(self) -> int: ...
    @property
    def fingerprint(self) -> str: ...
    @property
    def graph_hash(self) -> str: ...
    @property
    def ir(self) -> Module: ...


def module_html(module: ModuleIdentity) -> str:
    """A module's identity (label, sizes, fingerprint, graph hash) and its computations, the
    entry first, as a fragment."""
    root = f"xg{next(_COUNTER)}"
    # The reader's IR, not the API's views: a table of 60 computations builds no Instruction.
    ordered = sorted(module.ir.computations, key=lambda c: not c.is_entry)
    shown = ordered[:MAX_COMPUTATIONS]
    body = (
        _environment()
        .from_string(_MODULE)
        .render(m=module, n=len(ordered), computations=shown, more=len(ordered) - len(shown), root=root)
    )
    return _fragment(root, body, {})
