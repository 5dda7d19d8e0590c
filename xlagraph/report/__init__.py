"""`xlagraph report` and `xlagraph check`: a whole run, every recompile explained.

`runlog_from_save_file` reads a plain XLA_SAVE_TENSORS_FILE dump; `load_runs` also reads capture
folders (`xlagraph.capture`); `build_report` and `check_run` work on the resulting `RunLog`s.

Names are imported when first used: `xlagraph graphs` reads `report.ranks` without paying for
the diagnosis engine that `build_report` brings.
"""

from __future__ import annotations

import importlib
from typing import Any

from xlagraph._callable import make_callable

_WHERE = {
    "build_report": "build",
    "check_run": "check",
    "is_capture_dir": "load",
    "load_runs": "load",
    "runlog_from_save_file": "savefile",
    **dict.fromkeys(
        (
            "Attribution",
            "Baseline",
            "CheckResult",
            "CountedGraph",
            "RankingEntry",
            "Recompile",
            "RunReport",
            "TensorRef",
            "TimelineEntry",
            "Variant",
        ),
        "model",
    ),
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'xlagraph.report' has no attribute {name!r}")
    return getattr(importlib.import_module(f"xlagraph.report.{module}"), name)


make_callable(__name__)  # `xlagraph.report(src)` calls xlagraph.api.report (xlagraph/_callable.py)
