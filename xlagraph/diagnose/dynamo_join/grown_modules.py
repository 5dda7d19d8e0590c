"""A compiled module's list of submodules that grew (or shrank) mid-run: the retrace's graphs of that
step are the new (dropped) module's work, one cause where the user changes the list.

`self.blocks.append(block)` between calls of a torch.compile'd module: dynamo guards on the list's
length (`len(self._modules['blocks']._modules)`, a check dynamo 2.9 prints with no line of the
frame) and traces the forward again. Every graph that retrace compiles on its step holds the
module's work: its initialization (pending when the openxla bridge's first call of the new trace
syncs everything: outputs added), its forward (inputs, activations and a matmul more), its
gradients and updates (outputs added); and, as that first call synced the step's pending tensors,
the step's own sync no longer returns them (outputs removed). None of it is a tensor kept alive or a
region nobody named: the list's change, at the line that grows it (`value_origin`: where an item
is added outside `__init__`). Only with that line found and every live cause of one of those kinds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import Retrace, with_one_cause
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.recompile import Recompile

__all__ = ["grown_modules"]

# dynamo's length check of a module's container of submodules (ModuleList, Sequential, ModuleDict)
_MODULE_LIST = re.compile(r"len\([^)]*\._modules\['\w+'\]\._modules\)")
# What the new module's work reads as in a graph of the retrace's step (a constant too: the loop's
# body once more, with the constants of its index, `h / (i + 1)`; dynamo traced again for the length
# alone, so no other Python value the frame reads changed)
_ITEM_WORK = frozenset(
    {
        CauseKind.CONSTANT_VALUE,
        CauseKind.OUTPUT_ADDED,
        CauseKind.OUTPUT_REMOVED,
        CauseKind.PARAMETER_ADDED,
        CauseKind.PARAMETER_REMOVED,
        CauseKind.STRUCTURE,
    }
)


def _grown(retrace: Retrace | None) -> bool:
    return (
        retrace is not None
        and not retrace.expected
        and retrace.guard.kind == "sequence_length"
        and bool(retrace.guard.origin)
        and bool(_MODULE_LIST.search(retrace.guard.text))
    )


def grown_modules(recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]) -> tuple[Recompile, ...]:
    """Each graph of such a retrace, on the step it first ran, told by the list's change (module doc)."""
    first: dict[str, int] = {}
    removed: set[str] = set()
    for r in recompiles:
        if _grown(retraces.get(r.dynamo)):
            first[r.dynamo] = min(first.get(r.dynamo, r.step), r.step)
            if any(c.kind is CauseKind.PARAMETER_REMOVED and not c.info for c in r.causes):
                removed.add(r.dynamo)
    out = []
    for r in recompiles:
        live = [c for c in r.causes if not c.info]
        own = r.dynamo in first and r.step == first[r.dynamo]
        if not own or not live or any(c.kind not in _ITEM_WORK for c in live):
            out.append(r)
            continue
        retrace = retraces[r.dynamo]
        guard = retrace.guard
        more = retrace.inputs_added > 0 or (retrace.inputs_added == 0 and r.dynamo not in removed)
        kind, verb, noun = (
            (CauseKind.PARAMETER_ADDED, "grown", "new")
            if more
            else (CauseKind.PARAMETER_REMOVED, "shrunk", "dropped")
        )
        lines = tuple(dict.fromkeys(x for x in (guard.origin, retrace.call_site) if x))
        cause = Cause(
            kind,
            f"{guard.phrase}, {verb} at {guard.origin} (`{guard.origin_source[:60]}`): torch.compile "
            f"traced `{retrace.function}` again for the list's new length, and this graph holds the "
            f"{noun} module's work (its weights, initialization, forward, gradients and updates), "
            "not tensors kept alive",
            fix_text("parameter_added.layer"),
            sources=lines,
        )
        causes = (cause, *(c for c in r.causes if c.info))
        out.append(with_one_cause(r, causes, lines, tuple(dict.fromkeys(lines + r.lines))))
    return tuple(out)
