"""Random work in one graph only, read from the user's code: whether it switches `train()` and
`eval()` between steps, where it sets a dropout probability, and whether the random ops are its
own random tensors rather than dropout. Used by `conditional_work`.

Dropout leaves the graph in eval() mode, and at p=0: where the user's code never switches modes,
a probability that reached 0 is what removed it (telling them to call train() would change
nothing).
"""

from __future__ import annotations

import ast
import re

from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.recognizers._source import BUILDERS, calls_of_function, enclosing_function, source_text
from xlagraph.diagnose.recognizers._statements import (
    LOOPS,
    call_name,
    enclosing_at,
    first_call,
    statements_where,
)

__all__ = ["DROPOUT_ZERO", "mode_switched", "sets_dropout_p", "user_random"]

DROPOUT_ZERO = (
    "random-number ops (dropout) only in one graph, and the script never calls eval(): a dropout "
    "probability reached 0.0"
)
_MODE_CALLS = 8

# A random tensor of the user's own (torch.randn before the loop, computed in the first graph
# and an input later), not dropout: no mode or probability to fix.
_RANDOM_CALL = re.compile(
    r"\btorch\.(randn|rand|randint|randperm|normal|bernoulli)\b|\.(normal_|uniform_|random_)\("
)


def _switches_mode(stmt: ast.stmt) -> bool:
    """A statement that switches modes (`model.eval()`, `self.net.train(False)`), not prose."""
    call = first_call(stmt.value) if isinstance(stmt, ast.Expr) else None
    return call is not None and isinstance(call.func, ast.Attribute) and call.func.attr in ("eval", "train")


def mode_switched(files: list[str]) -> bool:
    """The user's code switches modes between steps: an `eval()` (or `train(flag)`), or a
    `train()` inside a loop. A module starts in train mode, so one `model.train()` before the
    loop sets the mode once and never toggles it."""
    found = statements_where(files, _switches_mode, limit=_MODE_CALLS)
    for loc in found:
        chain = enclosing_at(loc)[2]
        call = first_call(chain[-1][0].value) if chain and isinstance(chain[-1][0], ast.Expr) else None
        if call is None or not isinstance(call.func, ast.Attribute):
            return True  # (cannot tell: counted as a switch, as before)
        if call.func.attr == "eval" or call.args or call.keywords:
            return True
        if any(isinstance(s, LOOPS) for s, _ in chain):
            return True
    return len(found) >= _MODE_CALLS


def user_random(said: list[str], lines: list[str]) -> bool:
    """The random ops come from the user's own random tensors or from weights drawn again
    (`torch/nn/init.py`: adapters reset every k steps), with no dropout anywhere. `said`: the
    files and library lines the random work cites; `lines`: the user's lines it cites."""
    if any("dropout" in f for f in said):
        return False
    if any(f.replace("\\", "/").endswith("torch/nn/init.py") for f in said):
        return True
    return bool(lines) and all(_RANDOM_CALL.search(source_text(loc)) for loc in lines)


def _sets_p(stmt: ast.stmt) -> bool:
    """`m.p = p`, `model.drop.p = 0.0`, `setattr(m, "p", p)`: a dropout module's probability set."""
    if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Attribute):
        return stmt.targets[0].attr == "p"
    return isinstance(stmt, (ast.Expr, ast.Assign)) and any(
        call_name(n.func) == "setattr" and len(n.args) > 1 and getattr(n.args[1], "value", None) == "p"
        for n in ast.walk(stmt)
        if isinstance(n, ast.Call)
    )


def sets_dropout_p(files: list[str]) -> list[str]:
    """Where the user's code sets a dropout probability outside the methods that build a module
    (`__init__` gives the first value), and the call of the function that does it (a scheduler's
    `step(step)` in the loop): at most two such lines, else none (the text does not say which)."""
    sets = statements_where(files, _sets_p, limit=8)
    found = [loc for loc in sets if enclosing_function(*split_location(loc)) not in BUILDERS]
    if not found or len(found) > 2:
        return []
    calls = [c for loc in found for c in calls_of_function(loc, files, limit=1)]
    return list(dict.fromkeys([*found, *calls]))
