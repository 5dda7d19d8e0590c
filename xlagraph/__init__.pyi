# Types of the names xlagraph/__init__.py imports when first used (none at start-up).
from xlagraph.api import (
    Check,
    Computation,
    Diff,
    Divergence,
    Event,
    Graphs,
    InputError,
    Instruction,
    Module,
    ParseError,
    Ranks,
    Report,
    XlagraphError,
    check,
    diff,
    diverge,
    graphs,
    load,
    load_all,
    ranks,
    report,
    watch,
)
from xlagraph.capture._hook import capture

__all__ = ["Check", "Computation", "Diff", "Divergence", "Event", "Graphs", "InputError", "Instruction",
           "Module", "ParseError", "Ranks", "Report", "XlagraphError", "capture", "check", "diff", "diverge",
           "graphs", "load", "load_all", "ranks", "report", "watch"]  # fmt: skip
