"""`attribute`: the buffers donated to outputs differ (`input_output_alias` / `buffer_donor` in the
module header). The program is the same computation, but which input an output may overwrite is
compiled in: JAX compiles once per `donate_argnums`, torch_xla donates the inputs a step updates
in place."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._causes import renamed

__all__ = ["RECOGNIZER"]

HINT = fix("attribute.donation")


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    found = [i for i, c in enumerate(pending) if c.attribute_only("input_output_alias")]
    if not found:
        return NOTHING
    causes = tuple(renamed(pending[i], CauseKind.ATTRIBUTE, pending[i].summary, hint=HINT) for i in found)
    return Recognized(causes, frozenset(found))


RECOGNIZER = Recognizer("donation", _recognize)
