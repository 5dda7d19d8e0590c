"""Each recompile's diff against its baseline, for the pages that show it (HTML, notebooks).

The report keeps causes, not `DiffResult`s: a report's recompiles are explained in forked
workers, whose diffs (modules, canonical forms, the core's handles) do not travel back. A page
asks for them here, once per report (`xlagraph.api.Report.diffs`), so no renderer parses or diffs.
"""

from __future__ import annotations

from xlagraph.diff import DiffResult, diff_modules
from xlagraph.errors import XlagraphError
from xlagraph.ir import Module
from xlagraph.parse.sources import load_module
from xlagraph.report.model import RunReport

__all__ = ["recompile_diffs"]


def recompile_diffs(report: RunReport) -> dict[int, DiffResult]:
    """The diff of each recompile against its baseline, keyed by the recompile's sync, from the
    variants' graphs (`Variant.module`); recompiles without both graphs are left out."""
    specs = {v.letter: v.module for v in report.variants}
    modules: dict[str, Module | None] = {}

    def module(letter: str) -> Module | None:
        spec = specs.get(letter, "")
        if spec and spec not in modules:
            try:
                modules[spec] = load_module(spec)
            except (XlagraphError, OSError, RecursionError):
                modules[spec] = None
        return modules.get(spec) if spec else None

    out = {}
    for r in report.recompiles:
        if r.baseline is None or not r.causes:
            continue
        a, b = module(r.baseline.variant), module(r.variant)
        if a is not None and b is not None:
            out[r.sync] = diff_modules(a, b)
    return out
