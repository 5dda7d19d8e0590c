"""Parameters switched to (or from) training: `requires_grad_(True)` on a frozen encoder.

The step gains the encoder's backward and one update per parameter: outputs added, each `p - lr *
grad` of an input both graphs read. That is not a tensor kept alive: it is the set of trained
parameters that changed, once per switch. The user's `requires_grad` line is cited."""

from __future__ import annotations

import re
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._dataflow import updated_inputs
from xlagraph.diagnose.recognizers._periodic import enclosing_if
from xlagraph.diagnose.recognizers._source import (
    calls_of_function,
    enclosing_function,
    lines_matching,
    source_text,
    user_files,
)
from xlagraph.diagnose.recognizers._statements import calls_of, function_around, in_docstring
from xlagraph.diagnose.shapes import shape_of
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]

_REQUIRES_GRAD = re.compile(r"\brequires_grad(_\s*\(|\s*=[^=])")
_NEW = (CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED)
_OUTPUTS = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)
HINT = fix("trainable.requires_grad")
PHASE_HINT = fix("trainable.phase")
DETACH_HINT = fix("trainable.detach")


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    # Only an output added or removed is read below: without one, the inputs' twins (two
    # dictionaries over some 2,600 inputs a side in a 99K graph) are not worth making.
    if not any(c.kind in _OUTPUTS for c in pending):
        return NOTHING
    out: list[Cause] = []
    consumed: set[int] = set()
    # Inputs both graphs take (paired, and not among those a cause calls new) that the other
    # graph reads without updating them.
    new = {n for c in pending if c.kind in _NEW for n in (*c.left, *c.right)}
    left, right = evidence.left.entry, evidence.right.entry
    # Each side's inputs to their counterparts: only inputs are looked up (the values of
    # `updated_inputs`), so only they are kept (not every pair of the matching, twice).
    match, lparams = evidence.entry_match, left.param_number
    a_of = {
        b: a for b in right.param_number if (a := match.get(b)) is not None and a not in new and b not in new
    }
    inverse = evidence.entry_match_left
    b_of = {a: b for a in lparams if (b := inverse.get(a)) is not None and a not in new and b not in new}
    trained_a = set(updated_inputs(left, left.outputs).values())
    trained_b = set(updated_inputs(right, right.outputs).values())
    for kind, new_inputs, side, word in (
        (CauseKind.OUTPUT_ADDED, CauseKind.PARAMETER_ADDED, "right", "True"),
        (CauseKind.OUTPUT_REMOVED, CauseKind.PARAMETER_REMOVED, "left", "False"),
    ):
        comp, twin, trained = (right, a_of, trained_a) if side == "right" else (left, b_of, trained_b)
        for i, c in enumerate(pending):
            if c.kind is not kind:
                continue
            heads = [ch.right if side == "right" else ch.left for ch in c.changes if ch.what == "output"]
            # An update of an input the other graph does not take at all counts too, beside one of
            # a parameter both read: the optimizer state (Adam's moments) of a parameter frozen since
            # is no longer read. (A layer added or removed takes its weights with it: no twin.)
            # A parameter's update is the value for the next step: nothing in this one reads it
            # (an adversarial batch, `x + eps * grad.sign()`, updates an input too, and feeds the
            # step's own forward).
            users = users_of(comp)
            updated = {
                o: p for o, p in updated_inputs(comp, heads).items() if not _read_in_step(comp, users, o)
            }
            frozen = [o for o, p in updated.items() if p in twin and twin[p] not in trained]
            # A graph of the update alone (torch.compile's forward and backward run in the
            # bridge's graph, the optimizer in a lazy one): a parameter that gets no gradient
            # any more is skipped by the optimizer and leaves that graph whole, so it has no twin.
            # It is one the graph reads only to update it, several of them (a layer's weight and
            # bias), each read where it is written: no forward reads it here.
            # One such weight alone (an embedding's) is a frozen part too where the user's code
            # switches requires_grad that way while training runs.
            alone = [o for o, p in updated.items() if p in new and _only_updated(users, p, o)]
            enough = len(alone) > 1 or (len(alone) == 1 and _switched_mid_run(evidence, word))
            frozen += alone if enough and len(alone) == len(updated) - len(frozen) else []
            removed = [o for o, p in updated.items() if p in new]
            updates = list(dict.fromkeys(frozen + removed)) if frozen else []
            # An optimizer's fresh state for the newly trained parameters (Adam's moments, of their
            # shapes, and its scalar step counts) comes with their updates.
            shapes = {shape_of(comp, p) for o, p in updated.items() if o in updates}
            state = [h for h in heads if h not in updates and updates and _state_like(comp, h, shapes)]
            if not heads or 2 * (len(updates) + len(state)) < len(heads) or 4 * len(updates) < len(state):
                continue
            lines, hint, phase, detach = _switch_lines(evidence, word), HINT, False, False
            if not lines and len(updates) > 1:
                # No requires_grad switch: a Python flag that `.detach()`es a part of the model
                # (a front end frozen from some step) cuts its backward and updates the same way.
                # A detach cuts every weight upstream of it (a layer's weight and bias at least):
                # one update alone is a tensor kept alive on some steps, not a part of the model.
                lines = _detach_lines(evidence)
                hint, detach = DETACH_HINT, bool(lines)
            if not lines and side == "right":
                # No requires_grad switch: a new phase of training (a new optimizer over more
                # parameters, a `torch.no_grad()` branch left after a linear probe).
                lines, hint, phase = _phase_lines(evidence), PHASE_HINT, True
            if not lines:
                continue  # no switch in the user's code: another pattern (an optimizer's new group)
            # Inputs read only inside the new work (a step count, a scale) come with it.
            cone = set(getattr(c, side))
            inside = [
                k
                for k, d in enumerate(pending)
                if d.kind is new_inputs and all(u in cone for n in getattr(d, side) for u in users.get(n, ()))
            ]
            out.append(
                replace(
                    c,
                    kind=CauseKind.CONDITIONAL_WORK if detach else c.kind,
                    summary=(
                        f"a Python flag no longer detaches a part of the model: B also trains "
                        f"{len(updates)} parameter(s) A only reads: {c.summary}"
                        if detach and side == "right"
                        else f"a Python flag detaches a part of the model: B no longer trains "
                        f"{len(updates)} parameter(s) A trains: {c.summary}"
                        if detach
                        else f"a new phase of training: B also trains {len(updates)} parameter(s) A only "
                        f"reads (a new optimizer, or a no_grad branch left): {c.summary}"
                        if phase
                        else f"B also trains {len(updates)} parameter(s) A only reads: {c.summary}"
                        if side == "right"
                        else f"B no longer trains {len(updates)} parameter(s) A trains: {c.summary}"
                    ),
                    hint=hint,
                    info=phase or c.info,
                    sources=tuple(dict.fromkeys([*lines, *c.sources]))[:6],
                    changes=c.changes + tuple(ch for k in inside for ch in pending[k].changes),
                    **{side: getattr(c, side) + tuple(n for k in inside for n in getattr(pending[k], side))},
                )
            )
            consumed.update([i, *inside])
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


def _in_init(at: str) -> bool:
    """Set-up: the line sits in an `__init__`, run before any step."""
    file, _, line = at.rpartition(":")
    return enclosing_function(file, int(line)) == "__init__"


def _switched_mid_run(evidence: Evidence, word: str) -> bool:
    """The user's first requires_grad switch sets `word` (`requires_grad_(False)`) outside set-up."""
    lines = _switch_lines(evidence, word)
    return bool(lines) and word in source_text(lines[0]) and not _in_init(lines[0])


def _switch_lines(evidence: Evidence, word: str) -> list[str]:
    """The user's `requires_grad` lines, the switch made while training runs first: set-up in an
    `__init__` freezes or unfreezes before any step. Where the switch sits in a function of its
    own (`unfreeze_top_layer()`), that function's `add_param_group(...)` and the `if` around its
    call come with it: together they decide the step on which the graph changes."""
    found = lines_matching(user_files(evidence), _REQUIRES_GRAD, limit=8)
    lines = [at for at in found if not in_docstring(at)]
    lines.sort(key=lambda loc: (_in_init(loc), word not in source_text(loc)))
    if not lines or _in_init(lines[0]):
        return lines[:2]
    file, _, line = lines[0].rpartition(":")
    function = function_around(file, int(line))
    if function is None:
        return lines[:2]
    groups = calls_of("add_param_group", [file], 10_000)
    around = [
        g
        for g in groups
        if g != lines[0] and function.lineno < int(g.rpartition(":")[2]) <= (function.end_lineno or 0)
    ][:1]
    for call in calls_of_function(lines[0], limit=1):
        around += [x for x in (enclosing_if(call), call) if x]
    return list(dict.fromkeys([lines[0], *around, *lines[1:2]]))[:4]


_DETACH = re.compile(r"\.detach\s*\(\s*\)")
_INLINE_IF = re.compile(r"\bif\b(.+?)\belse\b")  # `h.detach() if frozen else h`
_NAME = re.compile(r"[A-Za-z_]\w*")
_KEYWORDS = frozenset({"if", "elif", "else", "not", "and", "or", "is", "None", "True", "False", "self", "in"})


def _detach_lines(evidence: Evidence) -> list[str]:
    """Where a Python flag chooses `.detach()` (`if args.frontend_frozen: h = h.detach()`,
    `h.detach() if frozen else h`, `if state["frozen"]:`): the flag's assignments made while
    training runs (a callback's `trainer.args.frontend_frozen = True`) first, set-up in an
    `__init__` last, then the `if` and the detach. Empty where no detach sits under a condition."""
    files = user_files(evidence)
    for loc in (at for at in lines_matching(files, _DETACH, limit=8) if not in_docstring(at)):
        inline = _INLINE_IF.search(source_text(loc).split("#", 1)[0])
        guard = enclosing_if(loc) or (loc if inline else "")
        if not guard:
            continue
        test = inline.group(1) if inline and guard == loc else source_text(guard).split(":", 1)[0]
        flags = [n for n in _NAME.findall(test) if n not in _KEYWORDS][-1:]
        # `frozen = True`, `args.frozen = True`, `state["frozen"] = True`
        assigned = [re.compile(rf"\b{f}\b['\"]?\]?\s*=[^=]") for f in flags]
        sets = [at for pattern in assigned for at in lines_matching(files, pattern, limit=8)]
        sets.sort(key=_in_init)
        return list(dict.fromkeys([*sets[:1], guard, loc]))[:4]
    return []


# An optimizer made with the parameters it trains, and a block whose ops record no gradient.
_OPTIMIZER = re.compile(
    r"\b(?:torch\.)?optim\.\w+\s*\(|\b(?:SGD|Adam|AdamW|Adagrad|RMSprop|Adafactor|LAMB|Lion)\s*\("
)
_NO_GRAD = re.compile(r"\bno_grad\s*\(\s*\)|\binference_mode\s*\(")


def _phase_lines(evidence: Evidence) -> list[str]:
    """Where a new phase of training starts without a requires_grad switch: an optimizer made
    under an `if` of the run (`if epoch == probe_epochs: optimizer = AdamW(model.parameters())`)
    and the `if`, then `torch.no_grad()` blocks under an `if` (a probe that only trains the head).
    Empty where the code shows none of them."""
    files = user_files(evidence)
    made = [(loc, g) for loc in lines_matching(files, _OPTIMIZER, limit=8) if (g := enclosing_if(loc))]
    frozen = [(loc, g) for loc in lines_matching(files, _NO_GRAD, limit=8) if (g := enclosing_if(loc))]
    if not made:
        return []
    return list(dict.fromkeys([made[0][0], made[0][1], *(loc for loc, _ in frozen[:1])]))[:4]


def _read_in_step(comp, users: dict[str, list[str]], name: str) -> bool:  # type: ignore[no-untyped-def]
    return any(comp.instruction(u).opcode not in ("tuple", "get-tuple-element") for u in users.get(name, ()))


def _only_updated(users: dict[str, list[str]], param: str, output: str) -> bool:
    """`param` is read only on its way to `output`, its own update (`p - lr * grad`)."""
    seen, stack = set(), list(users.get(param, ()))
    while stack:
        u = stack.pop()
        if u == output or u in seen:
            continue
        seen.add(u)
        nxt = users.get(u, ())
        if not nxt:
            return False
        stack += nxt
    return True


def _state_like(comp, name: str, shapes: set[str]) -> bool:  # type: ignore[no-untyped-def]
    shape = shape_of(comp, name)
    return shape in shapes or shape.split("{")[0].endswith("[]")


RECOGNIZER = Recognizer("trainable", _recognize)
