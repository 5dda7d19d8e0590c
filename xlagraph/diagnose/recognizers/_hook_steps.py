"""Work that runs from the step a hook is registered on: where its user lines sit in a function
registered as a hook (`clamp` of `model.body.register_forward_hook(clamp)` under `if step == 4:`),
the registration decides and is cited first. Used by `conditional_work`."""

from __future__ import annotations

import ast
from dataclasses import replace

from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._host_branch import BRANCH_HINT
from xlagraph.diagnose.recognizers._source import source_text
from xlagraph.diagnose.recognizers._statements import enclosing_at
from xlagraph.diagnose.recognizers._user_flow import hook_registrations

__all__ = ["hooked"]


def hooked(cause: Cause) -> Cause:
    """`cause` citing the hook registration its work runs under, first; said to run from that
    step on where the registration sits under an `if` or in a loop."""
    hooks = hook_registrations([s for s in cause.sources if is_user_location(s)][:3])
    if not hooks:
        return cause
    sources = tuple(dict.fromkeys([*hooks, *cause.sources]))[:6]
    if not any(isinstance(s, (ast.If, ast.For, ast.While)) for s, _ in enclosing_at(hooks[0])[2]):
        return replace(cause, sources=sources)  # registered once, up front: the work's own reason stands
    text = source_text(hooks[0]).split("#", 1)[0].strip()
    summary = (
        f"work that runs from this step on: a hook registered mid-run by `{text[:80]}` at {hooks[0]} "
        f"adds its ops (and their backward) to every step after it ({cause.count} difference(s))"
    )
    return replace(cause, summary=summary, sources=sources, hint=BRANCH_HINT)
