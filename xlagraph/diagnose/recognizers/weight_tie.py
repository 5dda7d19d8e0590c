"""Weights tied mid-run: `lm.head.weight = lm.embed.weight` under `if i == WARMUP_STEPS:`.

The tied weight's own tensor stops being a parameter of the step: it is read and updated no more
(its input and its update's outputs go), and the shared weight's gradient gains its term. Earlier
recognizers name that as inputs and outputs of one graph only (a layer's work), cited at the
optimizer's step. The line that decides is the assignment of one module's weight to another's
inside the loop around the sync: cited first, with a hint that says the parameter set changed. A tie
made while the model is built (`__init__`, before the loop) changes nothing between steps.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from xlagraph.diagnose.causes import INTERFACE, Cause
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_user_location, split_location
from xlagraph.diagnose.recognizers._statements import LOOPS, enclosing, statements_where
from xlagraph.diagnose.recognizers.new_input import layer_work

__all__ = ["RECOGNIZER"]

HINT = fix("parameter_removed.weight_tie")
# The attributes of a module that are its parameters (`head.weight`, `proj.bias`).
_PARAMETERS = frozenset({"weight", "bias"})


def _is_tie(stmt: ast.stmt) -> bool:
    """`a.weight = b.weight`: a parameter attribute bound to another object's parameter."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return False
    target, value = stmt.targets[0], stmt.value
    return (
        isinstance(target, ast.Attribute)
        and isinstance(value, ast.Attribute)
        and target.attr in _PARAMETERS
        and value.attr in _PARAMETERS
        and ast.unparse(target.value) != ast.unparse(value.value)
    )


def _in_step_loop(location: str, site: str) -> bool:
    """The statement at `location` runs in a loop that also holds the sync's `site` (the
    training loop, not a loop of the model's build)."""
    file, line = split_location(location)
    _, at = split_location(site)
    return any(
        isinstance(stmt, LOOPS) and stmt.lineno <= at <= (stmt.end_lineno or stmt.lineno)
        for stmt, _ in enclosing(file, line)[:-1]
    )


def _ties(evidence: Evidence) -> list[str]:
    """The ties made in the loop around the sync of the script that syncs, a few at most."""
    site = evidence.context.call_site
    file, _ = split_location(site)
    if not file or not is_user_location(site):
        return []
    return [loc for loc in statements_where([file], _is_tie, limit=4) if _in_step_loop(loc, site)]


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    candidates = [i for i, c in enumerate(pending) if c.kind in INTERFACE and not c.info]
    ties = _ties(evidence) if candidates else []
    if not ties:
        return NOTHING
    out: list[Cause] = []
    for i in candidates:
        c = pending[i]
        # Not a layer's or a stage's work, whatever an earlier recognizer guessed.
        plain = c.summary.replace(layer_work("A"), "").replace(layer_work("B"), "")
        summary = f"weights were tied at {ties[0]}: {plain}"
        out.append(
            replace(c, summary=summary, hint=HINT, sources=tuple(dict.fromkeys([*ties, *c.sources]))[:6])
        )
    return Recognized(tuple(out), frozenset(candidates))


RECOGNIZER = Recognizer("weight_tie", _recognize)
