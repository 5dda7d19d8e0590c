"""An optimizer replaced mid-run: `optimizer = SGD(...)` under `if step == k:` where Adam ran before.

The new optimizer's update is other work with other state (Adam's moments and step counts read no
more, or new ones made), which earlier recognizers name as inputs and outputs of one graph only,
cited at the `optimizer.step()` their ops come from. The line that decides is the assignment of a
new optimizer object to the name whose `.step()` the loop calls, and the `if` around it: they are
cited first, with a hint that says the optimizer changed.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from xlagraph.diagnose.causes import INTERFACE, Cause
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_optimizer_code, is_user_location, split_location
from xlagraph.diagnose.recognizers._periodic import enclosing_if
from xlagraph.diagnose.recognizers._statements import calls_of, enclosing_at, statements_where
from xlagraph.diagnose.recognizers.new_input import layer_work

__all__ = ["RECOGNIZER"]

HINT = fix("parameter_added.optimizer_swap")


def _stepped(location: str) -> str:
    """The name whose `.step()` the statement at `location` calls (`optimizer`, `self.opt`), or ""."""
    _, line, chain = enclosing_at(location)
    if not chain or chain[-1][0].lineno != line:
        return ""
    calls = (
        n.func.value
        for n in ast.walk(chain[-1][0])
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "step"
        and isinstance(n.func.value, (ast.Name, ast.Attribute))
    )
    return next((ast.unparse(v) for v in calls), "")


def _swaps(location: str) -> list[str]:
    """The assignment of a new object to the name `location` steps, made under an `if` of the
    loop (or function) after an earlier one, then that `if`; empty where there is none."""
    name = _stepped(location)
    if not name:
        return []
    file, _ = split_location(location)
    made = statements_where(
        [file],
        lambda s: (
            isinstance(s, ast.Assign)
            and isinstance(s.value, ast.Call)
            and any(ast.unparse(t) == name for t in s.targets)
        ),
        limit=8,
    )
    later = [(loc, guard) for loc in made[1:] if (guard := enclosing_if(loc))]
    return list(later[0]) if later else []


def _user_sites(evidence: Evidence) -> list[str]:
    """The `.step(...)` calls of the script that syncs (HLO metadata keeps only the innermost
    frame: the optimizer's own code, never the user's call), a few at most."""
    file, _ = split_location(evidence.context.call_site)
    return calls_of("step", [file], _SITES) if file and is_user_location(evidence.context.call_site) else []


_SITES = 4


def _optimizer_only(cause: Cause) -> bool:
    """All the cause's ops come from optimizer code, none from the user's lines or the model's
    (weights resized and a new optimizer made over them: the resize is the cause, not a swap)."""
    lines = (*cause.library, *cause.sources)
    return bool(lines) and all(is_optimizer_code(s) and not is_user_location(s) for s in lines)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    out: list[Cause] = []
    consumed: set[int] = set()
    for i, c in enumerate(pending):
        if c.kind not in INTERFACE or c.info or not _optimizer_only(c):
            continue
        lines = next((found for at in _user_sites(evidence) if (found := _swaps(at))), [])
        if not lines:
            continue
        # Not a layer's or a stage's work, whatever an earlier recognizer guessed.
        plain = c.summary.replace(layer_work("A"), "").replace(layer_work("B"), "")
        summary = f"the optimizer was replaced at {lines[0]}: {plain}"
        sources = tuple(dict.fromkeys([*lines, *c.sources]))[:6]
        out.append(replace(c, summary=summary, hint=HINT, sources=sources))
        consumed.add(i)
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


RECOGNIZER = Recognizer("optimizer_swap", _recognize)
