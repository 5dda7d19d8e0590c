"""Self-contained HTML pages: the diff of two graphs, and the run report.

The pages live in `html_diff` (with its context types in `html_diff_view`) and `html_report`;
what both share is in `html_common`. This module re-exports their public names, which notebook
views and the CLI import from here.
"""

from __future__ import annotations

from xlagraph.render.html_common import element_id, script_json
from xlagraph.render.html_diff import build_diff_view, render_diff_html
from xlagraph.render.html_diff_view import CauseView, Column, DiffPage, DiffView, Link, Row, Run, Section
from xlagraph.render.html_report import (
    ReportPage,
    RunView,
    build_run_view,
    render_report_html,
)

__all__ = [
    "CauseView",
    "Column",
    "DiffPage",
    "DiffView",
    "Link",
    "ReportPage",
    "Row",
    "Run",
    "RunView",
    "Section",
    "build_diff_view",
    "build_run_view",
    "element_id",
    "render_diff_html",
    "render_report_html",
    "script_json",
]
