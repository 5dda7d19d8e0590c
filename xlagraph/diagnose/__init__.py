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

from xlagraph.diagnose.causes import HINTS, Cause, CauseKind, Change, Moved
from xlagraph.diagnose.deadcode import dead_code
from xlagraph.diagnose.evidence import Context, Evidence, Recognized, Recognizer
from xlagraph.diagnose.raw_causes import compare_computation, input_dim_changes
from xlagraph.diagnose.recognizers import ORDER, recognize

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
