"""A retrace for the value an `if` tests, a loop counts or a flag sets: its graphs are the code that
branch picks, one cause at the guard's line; and the fix of such a guard (`branch_fix`)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import GuardFailure, Retrace, with_one_cause
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.guards import explain_guard
from xlagraph.diagnose.recognizers._statements import counts_loop, enclosing_at, header_tests, inline_test
from xlagraph.diagnose.recompile import Attribution, Recompile

__all__ = [
    "ARGUMENT_FIX",
    "INT_GUARDS",
    "branch_fix",
    "branch_guard_graphs",
    "fold_retraced_outputs",
    "join_branch_graphs",
]


# A guard on a Python argument that the compiled code branches on: the selection passed as a tensor
# and chosen on the device (`if tensor:` would be a data-dependent branch, a graph break).
ARGUMENT_FIX = "conditional_work.python_argument"
# The fixes of a branch the host decides, whose graphs of a step the bridge's graphs join.
_BRANCH_FIXES = frozenset({"conditional_work.host_branch", ARGUMENT_FIX})


def branch_fix(kind: str, source: str, subject: str) -> str:
    """A Python argument the guard's line branches on (`if flag:`, `a if flag else b`, `if mode ==
    "causal":`) picks code, not a constant: the selection passed as a tensor and chosen on the
    device. A value the guard's line loops over (`for _ in range(self.rounds):`) is a trip count:
    the unrolled loop's fix. "" for any other guard."""
    names = {subject.rsplit(".", 1)[-1]}
    if kind != "sequence_length" and counts_loop(source, names):  # (a tensor would not do: `range`
        return fix_text("conditional_work.trip_count")  # needs a number; a list has its own fix)
    if kind != "python_scalar" or not (header_tests(source, names) or inline_test(source, names)):
        return ""
    return fix_text(ARGUMENT_FIX)


def branch_guard_graphs(
    recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]
) -> tuple[Recompile, ...]:
    """The XLA graphs of a retrace whose guard failed on the value an `if` tests (an argument's
    None-ness, `if mask is not None:`; a flag, `if self.use_refiner:`): what differs (the mask's
    multiply, a layer's weights and results, the tensors the backward keeps) is the code that
    `if` picks, so it is one cause there, not tensors kept alive beside a region nobody named.
    The same for a loop over the value (its trip count), a list whose other length only adds or
    drops outputs (its items' work), a number the diff reads as sizes (an `attribute`
    with the fixed-size fix; for a global or a module's int, shapes that changed are its sizes too),
    and any other value where the diff found a region it cannot name. Only where
    every live cause cites the guard's line."""

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
    # Retraces for a Python number one of whose graphs the diff reads as sizes that changed (topk's
    # k, a slice's length): the number is a size baked into ops, whose fix is a fixed size, not a
    # tensor argument (a size cannot be data).
    sized = {r.dynamo for r in recompiles if any(_sized(r.causes[a.cause], cited(r)[0]) for a in cited(r)[1])}
    out = []
    for r in recompiles:
        retrace, live = cited(r)
        if retrace is None:
            out.append(r)
            continue
        guard, kind = retrace.guard, CauseKind.CONDITIONAL_WORK
        made = f", set at {guard.origin} (`{guard.origin_source[:60]}`)" if guard.origin else ""
        built = False  # a list's length no loop reads at the guard's line: the user's where it is built
        if guard.kind == "optional_argument":
            test = guard.source[:60] or "a test of the argument"
            what = f"`{test}` at {guard.at} runs other code for None than for a tensor"
            fix_id, case = "conditional_work.optional_argument", "case"
        elif (
            (guard.source.startswith(("if ", "elif ")) or _tested_inline(guard))
            and not any(r.causes[a.cause].kind is CauseKind.CONDITIONAL_WORK for a in live)
            and not (all(r.causes[a.cause].kind in _RETURNED for a in live) and _branch_returns(guard.at))
        ):  # (work the diff already named as a condition's, a flag's detach, is said better; a
            # graph that only returns other tensors, `if export: return out, emb`, is told by what
            # the user keeps of them; outputs a branch's work adds, the activations the backward
            # keeps of a loss term it adds, are that branch's code)
            test = guard.source if guard.source.startswith(("if ", "elif ")) else _tested_inline(guard)
            # (a key the caller stores into the dict it passes is said where it is stored, as a
            # list's length where it is built: the line a user changes, beside the `if`)
            stored = made if guard.kind == "dict_key" else ""
            what = f"`{test[:60]}` at {guard.at} picks other code: {guard.phrase}{stored}"
            # (an argument's value is the caller's to pass as a tensor; an attribute or a global
            # the function reads is a flag the host sets: the branch's own fix)
            fix_id = ARGUMENT_FIX if guard.kind == "python_scalar" else "conditional_work.host_branch"
            case = "case"
        elif loop := counts_loop(guard.source, _guarded_names(guard)):
            what = f"`{loop[:60]}` at {guard.at} runs another number of times: {guard.phrase}"
            fix_id, case = "", "count"  # the guard's: the unrolled loop's, or a list's own
        elif guard.kind == "sequence_length" and all(r.causes[a.cause].kind in _RETURNED for a in live):
            # the other count's items: the activations, results and gradients its extra items add
            what = f"{guard.phrase}{made}, read at {guard.at}"
            fix_id, case, built = "", "count", True
        elif r.dynamo in sized and guard.kind in INT_GUARDS:
            what = f"{guard.phrase}{made}, read at {guard.at} as a size the graph's ops are built for"
            fix_id, case, kind = "attribute.size", "value", CauseKind.ATTRIBUTE
        elif r.dynamo in unnamed:
            # No rule tells how the value shapes the code (a dropout's p reaching 0.0 drops its
            # mask), but dynamo says which value it traced again for, and every difference cites
            # the line that reads it: the retrace's, not a region nobody named beside it.
            what = f"{guard.phrase}{made}, read at {guard.at}"
            fix_id, case = "", "value"
        else:
            out.append(r)
            continue
        if guard.kind == "sequence_length" and retrace.inputs_added:
            # The list holds tensors the graph takes as inputs: more (fewer) of them is what the
            # user changed where the list is made; the loop over it follows (issue 37).
            kind, what = _list_inputs(guard, retrace.inputs_added, retrace.breaks == retrace.breaks_before)
            built = True
        # An `if` or a loop decides at its line; a value no rule reads is the user's where it is set.
        first = (guard.origin, guard.at) if case == "value" or built else (guard.at, guard.origin)
        lines = tuple(dict.fromkeys(x for x in (*first, retrace.call_site) if x))
        cause = Cause(
            kind,
            f"{what}: torch.compile traced each {case}, and this graph is the other {case}'s",
            fix_text(fix_id) if fix_id else guard.fix,
            sources=lines,
        )
        causes = (cause, *(c for c in r.causes if c.info))
        out.append(with_one_cause(r, causes, lines, tuple(dict.fromkeys(lines + r.lines))))
    return tuple(out)


_RETURNED = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)


def _list_inputs(guard: GuardFailure, added: int, counted: bool) -> tuple[CauseKind, str]:
    """A list (or tuple) of tensors of another length, its items inputs of dynamo's graph:
    `parameter_added` (`parameter_removed`) said by the list's length, where it is made, and the loop
    or line that reads it. `added`: the inputs the retrace's graph reads beyond the last one's, one
    per item where `counted` (the same graph breaks: nothing else moved inputs between graphs)."""
    change = explain_guard(guard.text)
    name = change.subject.rsplit(".", 1)[-1]
    more, n = ("more", added) if added > 0 else ("fewer", -added)
    was = int(change.before) if change.before.isdigit() else None
    if counted and was is not None and was + added >= 0:
        holds = f"now holds {was + added} tensors (was {was})"
        inputs = f"one {more} input" if n == 1 else f"{n} {more} inputs"
        times = {1: "once more", -1: "once less"}.get(added, f"{n} {more} times")
    else:  # the inputs a graph break moved count too: the direction only
        holds, inputs, times = (
            f"now holds {more} tensors (was {change.before or 'another number'})",
            f"{more} inputs",
            f"{more} times",
        )
    made = f", made at {guard.origin}" if guard.origin else ""
    loop = counts_loop(guard.source, _guarded_names(guard))
    reads = f"`{loop[:60]}` at {guard.at} runs {times}" if loop else f"it is read at {guard.at}"
    kind = CauseKind.PARAMETER_ADDED if added > 0 else CauseKind.PARAMETER_REMOVED
    return kind, f"`{name}` {holds}{made}: the graph reads {inputs} and {reads}"


# Guards on a Python int the frame reads: an argument, a global, a module's attribute.
INT_GUARDS = frozenset({"python_scalar", "global_value", "module_attribute"})


def _sized(c: Cause, retrace: Retrace | None) -> bool:
    """`c` reads the guarded number as sizes: an `attribute` of sizes (topk's k, a slice's length),
    or, for a global or a module's attribute, ops or inputs of other shapes (a reshape to
    `self.heads`): nothing but that int changed since the last trace, dynamo says, so the sizes are
    its, not the data's. Only an int: a flag's shapes are the code it picks. (A module picked by
    the value is `picked_module`'s, which said so.)"""
    if c.info:
        return False
    if c.fix_id == "attribute.size":
        return True
    return (
        retrace is not None
        and retrace.guard.kind in ("global_value", "module_attribute")
        and bool(_INT_VALUE.search(retrace.guard.text.split("#", 1)[0]))
        and c.kind is CauseKind.PARAMETER_SHAPE
        and c.fix_id != "parameter_shape.switched_weights"
    )


# `self.heads == 4`: an int the frame was compiled for; a flag (`== False`) picks code, not sizes.
_INT_VALUE = re.compile(r"==\s*-?\d+\s*$")


def _branch_returns(at: str) -> bool:
    """The guard's line is a `return` (`return a if flag else b`) or an `if` whose blocks return:
    the branch hands the caller other tensors. True where the source cannot be read (as before)."""
    chain = enclosing_at(at)[2]
    if not chain:
        return True
    stmt = chain[-1][0]
    return any(isinstance(n, ast.Return) for n in ast.walk(stmt))


_NAMED = re.compile(r"`([A-Za-z_][\w.]*)`")


def _guarded_names(guard: GuardFailure) -> set[str]:
    """The names the guard's phrase names (`self.rounds` -> rounds), as a line reads them."""
    return {n.rsplit(".", 1)[-1] for n in _NAMED.findall(guard.phrase)}


def _tested_inline(guard: GuardFailure) -> str:
    """`if <test> else`, where the guard's line picks between two values by testing the guarded
    Python value (`tok = gold if teacher_forcing else pred`): the same branch as an `if` statement,
    one graph per outcome. "" where the line has no such test of a name the guard's phrase names."""
    return inline_test(guard.source, _guarded_names(guard))


def join_branch_graphs(recompiles: Sequence[Recompile]) -> tuple[Recompile, ...]:
    """A graph torch.compile's bridge first compiles mid-run from no user frame (its code after a
    graph break, traced again for the other side of a host read: `if loss.item() > limit:`) on a
    step whose own graphs change under that read is the same branch's work, not a program that
    runs at a point of its own: it takes the cause named at the `if` (issue 37)."""
    # The first host branch named on each step after the first, looked up once for all graphs.
    branches: dict[int, Cause] = {}
    for o in recompiles:
        for c in o.causes:
            if o.step > 0 and c.fix_id in _BRANCH_FIXES and not c.info:
                branches.setdefault(o.step, c)
    out = []
    for r in recompiles:
        own = len(r.causes) == 1 and r.causes[0].fix_id == "own_graph"
        branch = branches.get(r.step)
        if r.frames or r.trigger != "dynamo" or not own or branch is None:
            out.append(r)
            continue
        cause = replace(
            branch,
            summary=(
                f"torch.compile's bridge compiled this graph for its code after the graph break when "
                f"the branch flipped: {branch.summary}"
            ),
        )
        attribution = (Attribution(0, str(cause.kind), cause.summary, lines=cause.sources),)
        out.append(replace(r, causes=(cause,), attribution=attribution, lines=cause.sources))
    return tuple(out)


def fold_retraced_outputs(
    recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace]
) -> tuple[Recompile, ...]:
    """An output added or removed in an XLA graph that dynamo's retrace for a changed flag compiled
    (the bridge's forward and backward), where a graph of the same retrace's step names the flag's
    trained parameters (`trainable`: the lazy update lost or gained theirs): the backward returns
    those parameters' gradients or not, the same change. Not a tensor kept alive: that graph's
    cause, fix and lines, said once for both."""
    retraced = {k for k, t in retraces.items() if not t.expected}
    out = []
    for r in recompiles:
        bare = [a for a in r.attribution if a.kind in _OUTPUT_KINDS and _kept_alive(r.causes[a.cause])]
        named = [
            (other, other.causes[a.cause], a)
            for other in recompiles
            if r.dynamo in retraced and other is not r and other.step == r.step and other.dynamo == r.dynamo
            for a in other.attribution
            if other.causes[a.cause].fix_id.startswith("trainable.") and not other.causes[a.cause].info
        ]
        if not bare or not named:
            out.append(r)
            continue
        other, cause, by = named[0]
        causes = list(r.causes)
        attribution = []
        for a in r.attribution:
            if a not in bare:
                attribution.append(a)
                continue
            old = r.causes[a.cause]
            summary = (
                f"the graph torch.compile traced again for the flag: its backward returns the gradients "
                f"of the parameters graph {other.variant} no longer (or now) updates: {old.summary}"
            )
            causes[a.cause] = replace(old, kind=cause.kind, summary=summary, hint=cause.hint)
            attribution.append(replace(a, kind=by.kind, summary=summary, lines=by.lines))
        out.append(
            replace(
                r,
                causes=tuple(causes),
                attribution=tuple(attribution),
                lines=tuple(dict.fromkeys(by.lines + r.lines)),
            )
        )
    return tuple(out)


_OUTPUT_KINDS = frozenset({str(CauseKind.OUTPUT_ADDED), str(CauseKind.OUTPUT_REMOVED)})


def _kept_alive(c: Cause) -> bool:
    return c.fix_id in _OUTPUT_KINDS and not c.info
