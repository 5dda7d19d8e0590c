"""The graphs of a retrace that are expected: another mode's first compile, a warm-up cut; and
the mode switched once for good, which is not."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.dynamo_join.retrace import Retrace, with_one_cause
from xlagraph.diagnose.fixes import fix as fix_text
from xlagraph.diagnose.frames import split_location
from xlagraph.diagnose.guard_lines import grad_flag_lines
from xlagraph.diagnose.recognizers._source import calls_of_function, enclosing_function
from xlagraph.diagnose.recompile import Recompile

__all__ = [
    "GRAD_SWITCH_FIX",
    "SWITCH_FIX",
    "mode_graphs",
    "mode_switched",
    "switch_fix",
    "switched_compiles",
    "warm_up_cuts",
]


# The fix of dropout switched off for good: keep the mode (train) on every step.
SWITCH_FIX = "conditional_work.dropout"
# The fix of the grad mode switched for good: keep it on every call, detach where none should flow.
GRAD_SWITCH_FIX = "trainable.switched_grad_mode"
# Where a module that reads `self.training` is dropout's: its fix is SWITCH_FIX.
_DROPOUT_CODE = "nn/modules/dropout.py"


def switch_fix(retrace: Retrace) -> str:
    """The fix ID of a mode switched for good, from the code that read the mode the guard failed
    on (`guard.at`, where dynamo saw `self.training` read): torch's dropout, whose work the
    train mode is (`conditional_work.dropout`), else a module that runs other work in train mode,
    the user's own (`if self.training:` noise) or a library's (`conditional_work.training_branch`).
    (BatchNorm's batch statistics: torch_xla 2.9's backward of an eval BatchNorm under openxla
    fails at the switch, so no run reaches a report; it gets the general text.) The grad mode
    switched for good (a linear probe under no_grad, then fine-tuning): `trainable.switched_grad_mode`."""
    if retrace.guard.kind == "grad_mode":
        return GRAD_SWITCH_FIX
    at = retrace.guard.at.replace("\\", "/")
    return SWITCH_FIX if at.rpartition(":")[0].endswith(_DROPOUT_CODE) else "conditional_work.training_branch"


def mode_graphs(
    recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace], last_run: Mapping[str, int]
) -> tuple[Recompile, ...]:
    """The XLA graphs of an expected torch.compile recompile (the first compile of another mode: a
    scoring pass under no_grad, eval()) are that mode's code, compiled once and reused: what differs
    from the other mode's graph (no backward, no updates, other sizes) is what the mode computes,
    not a cause to fix. Said once, as dynamo's half says it. Unless the mode never flips back
    (`_switched`). `last_run`: the last sync each variant ran at."""
    out = []
    for r in recompiles:
        retrace = retraces.get(r.dynamo)
        if retrace is None or not retrace.expected or not r.causes or r.expected:
            out.append(r)
            continue
        if mode_switched(r, retraces, last_run):
            out.append(_mode_switch(r, retrace))
            continue
        lines = tuple(dict.fromkeys(x for x in (retrace.call_site, r.call_site) if x))
        cause = Cause(
            CauseKind.CONDITIONAL_WORK,
            f"the graph of another mode of `{retrace.function}`: torch.compile traced it again "
            f"({retrace.guard.phrase}), and this is what that mode computes; each mode is compiled once "
            "and reused",
            fix_text("own_graph"),
            info=True,
            sources=lines,
        )
        out.append(with_one_cause(r, (cause,), lines, lines))
    return tuple(out)


def mode_switched(r: Recompile, retraces: Mapping[str, Retrace], last_run: Mapping[str, int]) -> bool:
    """`r` is a graph of a retrace for another mode (dynamo's half calls it expected) whose
    baseline, the graph the other mode ran, never runs again after `r` first did: the mode was
    switched once, for good (dropout turned off after the first epoch), not alternated (an
    evaluation every k steps runs the training graph again). `last_run`: the last sync each
    variant ran at."""
    retrace = retraces.get(r.dynamo)
    if retrace is None or not retrace.expected or not r.causes or r.expected:
        return False
    base = r.baseline.variant if r.baseline else ""
    return bool(base) and base in last_run and last_run[base] < r.sync


def switched_compiles(
    recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace], last_run: Mapping[str, int]
) -> dict[str, str]:
    """Compile id -> the fix ID of each retrace whose mode was switched for good (`mode_switched`):
    dynamo's half no longer calls that compile expected."""
    return {
        r.dynamo: switch_fix(retraces[r.dynamo]) for r in recompiles if mode_switched(r, retraces, last_run)
    }


def _mode_switch(r: Recompile, retrace: Retrace) -> Recompile:
    """A mode switched once for good: every graph of the frame compiles again, and the old ones are
    dead. Cited where the mode is set (the `.eval()` / `training =` line dynamo's guarded attribute
    was set at), and where a helper that sets it is called from the loop."""
    origin = retrace.guard.origin
    # the grad mode: the `with` around the call, then the lines its flag reads (`probing = ...`)
    flags = grad_flag_lines(origin) if origin and retrace.guard.kind == "grad_mode" else ()
    lines = tuple(
        dict.fromkeys((origin, *flags, *_helper_calls(origin, retrace.call_site)) if origin else ())
    )
    cause = Cause(
        CauseKind.CONDITIONAL_WORK,
        f"the mode of `{retrace.function}` was switched once, for good, during training: torch.compile "
        f"traced it again ({retrace.guard.phrase}) and compiled every graph of it anew, and the graphs "
        "of the old mode never run again; set the mode once, before the first step, or keep it the same "
        "on every step",
        fix_text(switch_fix(retrace)),
        sources=lines,
    )
    return with_one_cause(r, (cause,), lines, tuple(dict.fromkeys(lines + r.lines)))


def _helper_calls(origin: str, call_site: str) -> list[str]:
    """The calls of the helper that sets the mode (`dropout_off(net)`), where `origin` is in a
    function other than the one that calls the compiled frame: the line the loop decides it at."""
    file, n = split_location(origin)
    cfile, cn = split_location(call_site)
    if not file or not cfile or enclosing_function(file, n) == enclosing_function(cfile, cn):
        return []
    return calls_of_function(origin, limit=2)


def warm_up_cuts(recompiles: Sequence[Recompile], phases: Mapping[str, set[str]]) -> tuple[Recompile, ...]:
    """A graph cut by an implicit sync from no frame at all (neither the user's nor a library's),
    run only on torch.compile's warm-up steps and never in the steady state: the bridge flushing
    work pending around its first runs, compiled once and never replayed. Only a cut is named
    there (`graph_break`): no step of the steady state pays for it, so it is warm-up, expected.
    `phases`: the phases (warm-up, steady) each variant ran in."""
    out = []
    for r in recompiles:
        live = [c for c in r.causes if not c.info]
        if (
            r.frames
            or r.library_frames
            or r.trigger != "implicit"
            or phases.get(r.variant) != {"warm-up"}
            or "steady" not in {p for v in phases.values() for p in v}
            or not live
            or any(c.kind is not CauseKind.GRAPH_BREAK for c in live)
        ):
            out.append(r)
            continue
        cause = Cause(
            CauseKind.STATE_INIT,
            "torch.compile's warm-up: an implicit sync from no frame of the run cut a graph on its warm-up "
            "steps only (the openxla bridge flushing work pending around its first runs); no step of the "
            "steady state is cut there, so it compiled once and is not replayed",
            fix_text("state_init.bridge_sync"),
            info=True,
        )
        out.append(with_one_cause(r, (cause,), (), r.lines))
    return tuple(out)
