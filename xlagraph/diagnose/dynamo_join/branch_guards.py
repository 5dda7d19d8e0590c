"""A retrace for the value an `if` tests or a loop counts: its graphs are the code that branch
picks, one cause at the guard's line; and the fix of such a guard."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import GuardFailure, Retrace, with_one_cause
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.guards import fix_for
from xlagraph.diagnose.recognizers._statements import counts_loop, header_tests, inline_test
from xlagraph.diagnose.recompile import Attribution, Recompile

__all__ = ["branch_guard_graphs", "guard_fix"]


def guard_fix(kind: str, source: str, subject: str) -> str:
    """The fix of a failed guard of `kind` on `subject`, read at the line `source`."""
    return _branch_fix(kind, source, subject) or fix_for(kind)


def _branch_fix(kind: str, source: str, subject: str) -> str:
    """A Python argument the guard's line branches on (`if flag:`, `a if flag else b`) picks code, not a
    constant: passed as a tensor it would be a data-dependent branch (a graph break), so the fix
    is the branch's, computed on the device. A value the guard's line loops over (`for _ in
    range(self.rounds):`) is a trip count: the unrolled loop's fix. "" for any other guard."""
    names = {subject.rsplit(".", 1)[-1]}
    if kind != "sequence_length" and counts_loop(source, names):  # (a tensor would not do: `range`
        return fix_text("conditional_work.trip_count")  # needs a number; a list has its own fix)
    if kind != "python_scalar" or not (header_tests(source, names) or inline_test(source, names)):
        return ""
    return fix_text("conditional_work.host_branch")


def branch_guard_graphs(
    recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]
) -> tuple[Recompile, ...]:
    """The XLA graphs of a retrace whose guard failed on the value an `if` tests (an argument's
    None-ness, `if mask is not None:`; a flag, `if self.use_refiner:`): what differs (the mask's
    multiply, a layer's weights and results, the tensors the backward keeps) is the code that
    `if` picks, so it is one cause there, not tensors kept alive beside a region nobody named.
    The same for a loop over the value (its trip count), and for any other value where the diff
    found a region it cannot name. Only where every live cause cites the guard's line."""

    def cited(r: Recompile) -> tuple[Retrace | None, list[Attribution]]:
        """The retrace and `r`'s live causes, where each of them cites its guard's line."""
        retrace = retraces.get(r.dynamo)
        at = retrace.guard.at if retrace and not retrace.expected else ""
        live = [a for a in r.attribution if not r.causes[a.cause].info]
        return (retrace, live) if at and live and all(at in a.lines for a in live) else (None, [])

    # Retraces one of whose graphs differs in a region the diff cannot name: said by the value
    # dynamo traced again for, in each graph of the retrace (the forward and its backward alike).
    unnamed = {
        r.dynamo
        for r in recompiles
        if any(r.causes[a.cause].kind is CauseKind.STRUCTURE for a in cited(r)[1])
    }
    out = []
    for r in recompiles:
        retrace, live = cited(r)
        if retrace is None:
            out.append(r)
            continue
        guard = retrace.guard
        if guard.kind == "optional_argument":
            test = guard.source[:60] or "a test of the argument"
            what = f"`{test}` at {guard.at} runs other code for None than for a tensor"
            fix_id, case = "conditional_work.optional_argument", "case"
        elif (
            (guard.source.startswith(("if ", "elif ")) or _tested_inline(guard))
            and not any(r.causes[a.cause].kind is CauseKind.CONDITIONAL_WORK for a in live)
            and not all(r.causes[a.cause].kind in _RETURNED for a in live)
        ):  # (work the diff already named as a condition's, a flag's detach, is said better; a
            # graph that only returns other tensors is told by what the user keeps of them)
            test = guard.source if guard.source.startswith(("if ", "elif ")) else _tested_inline(guard)
            what = f"`{test[:60]}` at {guard.at} picks other code: {guard.phrase}"
            fix_id, case = "conditional_work.host_branch", "case"
        elif loop := counts_loop(guard.source, _guarded_names(guard)):
            what = f"`{loop[:60]}` at {guard.at} runs another number of times: {guard.phrase}"
            fix_id, case = "", "count"  # the guard's: the unrolled loop's, or a list's own
        elif r.dynamo in unnamed:
            # No rule tells how the value shapes the code (a dropout's p reaching 0.0 drops its
            # mask), but dynamo says which value it traced again for, and every difference cites
            # the line that reads it: the retrace's, not a region nobody named beside it.
            made = f", set at {guard.origin} (`{guard.origin_source[:60]}`)" if guard.origin else ""
            what = f"{guard.phrase}{made}, read at {guard.at}"
            fix_id, case = "", "value"
        else:
            out.append(r)
            continue
        # An `if` or a loop decides at its line; a value no rule reads is the user's where it is set.
        first = (guard.origin, guard.at) if case == "value" else (guard.at, guard.origin)
        lines = tuple(dict.fromkeys(x for x in (*first, retrace.call_site) if x))
        cause = Cause(
            CauseKind.CONDITIONAL_WORK,
            f"{what}: torch.compile traced each {case}, and this graph is the other {case}'s",
            fix_text(fix_id) if fix_id else guard.fix,
            sources=lines,
        )
        causes = (cause, *(c for c in r.causes if c.info))
        out.append(with_one_cause(r, causes, lines, tuple(dict.fromkeys(lines + r.lines))))
    return tuple(out)


_RETURNED = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)
_NAMED = re.compile(r"`([A-Za-z_][\w.]*)`")


def _guarded_names(guard: GuardFailure) -> set[str]:
    """The names the guard's phrase names (`self.rounds` -> rounds), as a line reads them."""
    return {n.rsplit(".", 1)[-1] for n in _NAMED.findall(guard.phrase)}


def _tested_inline(guard: GuardFailure) -> str:
    """`if <test> else`, where the guard's line picks between two values by testing the guarded
    Python value (`tok = gold if teacher_forcing else pred`): the same branch as an `if` statement,
    one graph per outcome. "" where the line has no such test of a name the guard's phrase names."""
    return inline_test(guard.source, _guarded_names(guard))
