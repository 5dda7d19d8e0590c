"""`xlagraph report` and `xlagraph check`: a whole run, every recompile explained.

`runlog_from_save_file` reads a plain XLA_SAVE_TENSORS_FILE dump; `load_runs` also reads capture
folders (`xlagraph.capture`); `build_report` and `check_run` work on the resulting `RunLog`s.
"""

from xlagraph.report.build import build_report
from xlagraph.report.check import check_run
from xlagraph.report.load import is_capture_dir, load_runs
from xlagraph.report.model import (
    Attribution,
    Baseline,
    CheckResult,
    CountedGraph,
    RankEntry,
    Recompile,
    RunReport,
    TensorRef,
    TimelineEntry,
    Variant,
)
from xlagraph.report.savefile import runlog_from_save_file

__all__ = [
    "Attribution",
    "Baseline",
    "CheckResult",
    "CountedGraph",
    "RankEntry",
    "Recompile",
    "RunReport",
    "TensorRef",
    "TimelineEntry",
    "Variant",
    "build_report",
    "check_run",
    "is_capture_dir",
    "load_runs",
    "runlog_from_save_file",
]
