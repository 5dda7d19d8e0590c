"""Name the causes of the differences between two matched modules, in PyTorch/XLA terms.

Two layers:

1. `compare` (with `interface`, `instructions`, `regions`, `deadcode`): the raw differences of
   each pair of matched computations, in a fixed vocabulary (inputs, outputs, collectives,
   constants, attributes, structural regions);
2. `recognizers`: small modules, one per real-world pattern, run in a stated order over the raw
   differences and what a capture knows (`Evidence`); each names its pattern, cites the user's
   line and gives a fix that applies, and consumes the raw differences it explains. Whatever no
   recognizer explains stays `structure`, said plainly to be a pattern xlagraph does not know.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xlagraph.diagnose.causes import HINTS, Cause, CauseKind, Change, Moved
    from xlagraph.diagnose.deadcode import dead_code
    from xlagraph.diagnose.evidence import Context, Evidence, Recognized, Recognizer
    from xlagraph.diagnose.raw_causes import compare_computation, input_dim_changes
    from xlagraph.diagnose.recognizers import ORDER, recognize

# Each name's module, imported when the name is first used: a module that needs one small part of
# diagnose (`listing`'s wording, `causes`' kinds) must not load every recognizer (0.2 CPU-s of
# `xlagraph graphs` before bytecode is cached; issue 39).
_HOME = {
    **dict.fromkeys(("HINTS", "Cause", "CauseKind", "Change", "Moved"), "causes"),
    "dead_code": "deadcode",
    **dict.fromkeys(("Context", "Evidence", "Recognized", "Recognizer"), "evidence"),
    **dict.fromkeys(("compare_computation", "input_dim_changes"), "raw_causes"),
    **dict.fromkeys(("ORDER", "recognize"), "recognizers"),
}

__all__ = [
    "HINTS",
    "ORDER",
    "Cause",
    "CauseKind",
    "Change",
    "Context",
    "Evidence",
    "Moved",
    "Recognized",
    "Recognizer",
    "compare_computation",
    "dead_code",
    "input_dim_changes",
    "recognize",
]


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # once: later uses read the module's dict
    return value
