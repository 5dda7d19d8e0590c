"""`conditional_work`: work present only on some steps. `if step % k == 0:` gradient clipping,
logging or metrics; an optimizer step every k steps (gradient accumulation); dropout present in
`train()` and absent in `eval()`.

Evidence: a region of instructions that comes from gradient clipping, from optimizer code, or
from random-number ops; or a user line inside an `if ... % ...:` block. Whether random work is
dropout toggled, a probability set or the user's own random tensors is `_dropout_mode`'s; a hook
registered mid-run, cited for the work it adds, `_hook_steps`'s.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.causes import INTERFACE, Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import (
    is_optimizer_code,
    is_user_location,
    split_location,
)
from xlagraph.diagnose.recognizers._beside_work import taps_beside
from xlagraph.diagnose.recognizers._causes import TAPS, merge, one_sided, scalar_inputs
from xlagraph.diagnose.recognizers._clip import CLIP_OPS, CLIP_WORK, clip_ops, runs_clip, scalar_clip
from xlagraph.diagnose.recognizers._dataflow import downstream, opcodes, updated_inputs
from xlagraph.diagnose.recognizers._dropout_mode import (
    DROPOUT_ZERO,
    mode_switched,
    sets_dropout_p,
    user_random,
)
from xlagraph.diagnose.recognizers._hook_steps import hooked
from xlagraph.diagnose.recognizers._host_branch import (
    BRANCH_HINT,
    branch_summary,
    decided_branch,
    host_branch,
)
from xlagraph.diagnose.recognizers._periodic import periodic_caller, periodic_if
from xlagraph.diagnose.recognizers._source import enclosing_function, source_text, user_files
from xlagraph.diagnose.recognizers._statements import syntax_tree
from xlagraph.diagnose.recognizers._switched_on import switched_on
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of
from xlagraph.opcodes import RANDOM, RESTATES

__all__ = ["RECOGNIZER"]

_REGIONS = (CauseKind.STRUCTURE, *INTERFACE)
_CASCADE = (
    CauseKind.COLLECTIVE,  # the all-reduce of a norm, or of gradients, on those steps only
    CauseKind.STRUCTURE,
    CauseKind.OUTPUT_ADDED,
    CauseKind.OUTPUT_REMOVED,
    CauseKind.OUTPUT_PERMUTATION,
    CauseKind.LAYOUT,
)
# Ops that move or restate a value without computing: a region made only of these (a constant
# where the other graph reads an input) is a value that changed, not work done on some steps.
_PLUMBING = RESTATES | {"constant", "parameter", "tuple", "get-tuple-element"}
_PATTERNS = (
    (
        "clipping",
        lambda files, ops: any("clip_grad" in f or "_patched_functions" in f for f in files) or clip_ops(ops),
        "gradient clipping runs only on some steps",
        fix("conditional_work.clipping"),
    ),
    (
        "rng",
        lambda files, ops: bool(ops & RANDOM) or any("dropout" in f for f in files),
        "random-number ops (dropout) only in one graph: model.train() / model.eval() toggled",
        fix("conditional_work.dropout"),
    ),
    (
        "optimizer",
        lambda files, ops: any(is_optimizer_code(f) for f in files),
        "the optimizer's update runs only on some steps (gradient accumulation, a step every k)",
        fix("conditional_work.accumulation"),
    ),
)


def _library(evidence: Evidence, cause: Cause) -> list[str]:
    """The files the instructions come from, the text of the library lines they cite (the line
    of `F.dropout` says `dropout` where its file is only `functional.py`), and the names of the
    user's functions they sit in (a `clip_grad_norm_` of the user's own)."""
    names = [enclosing_function(*split_location(loc)) for loc in cause.sources]
    return (
        evidence.library_files(cause) + [source_text(loc) for loc in cause.library] + [n for n in names if n]
    )


def _user_random(evidence: Evidence, hits: list[Cause]) -> bool:
    """The random ops of `hits` are the user's own random tensors or weights drawn again."""
    said = [f for c in hits for f in _library(evidence, c)]
    return user_random(said, [loc for c in hits for loc in c.sources if is_user_location(loc)])


def _update_work(evidence: Evidence, cause: Cause) -> bool:
    """Outputs added or dropped whose own instructions (those computing only them) are an
    optimizer's arithmetic, at least `_UPDATE_WORK` of them, while the other graph runs no
    optimizer code at all: the update is there on some steps only. (Weights frozen or unfrozen
    change which weights the optimizer updates; it runs in both graphs.)"""
    found = evidence.instructions(cause)
    computing = [ins for _, ins in found if ins.opcode not in _PLUMBING]
    if len(computing) < _UPDATE_WORK or not any(is_optimizer_code(f) for f in evidence.library_files(cause)):
        return False
    other = evidence.left if cause.kind is CauseKind.OUTPUT_ADDED else evidence.right
    return not _runs_optimizer(other)


def _runs_optimizer(canon: CanonicalModule) -> bool:
    """Some instruction of the entry comes from optimizer code (its innermost frame)."""
    module = canon.module
    return any(
        is_optimizer_code(frame.file)
        for ins in canon.entry.computation.instructions
        for frame in module.frames_of(ins)[:1]
    )


def _update_calls(evidence: Evidence) -> tuple[str, ...]:
    """The user's lines that call `step()` on an optimizer they made from `torch.optim` (`opt =
    torch.optim.SGD(...)`, `self.opt = optim.AdamW(...)`): where an update's ops cite the
    optimizer's own lines only, the lines that ran it."""
    found = []
    for file in user_files(evidence):
        tree = syntax_tree(file)
        if tree is None:
            continue
        made = {
            ast.unparse(t)
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and "optim." in ast.unparse(n.value.func)
            for t in n.targets
        }
        found += [
            f"{file}:{n.lineno}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "step"
            and ast.unparse(n.func.value) in made
        ]
    return tuple(dict.fromkeys(found))


def _update_alone(evidence: Evidence, pending: tuple[Cause, ...], picked: list[int], hits: list[int]) -> bool:
    """Gradient accumulation's update on some steps (the first update, or the first step without
    one): two graphs, each compiled once, expected. Only where one graph runs no optimizer code at
    all (an update that runs in both and reads other gradients is work moved between graphs, a
    retrace's) and the update is all that changed: work of another region (the user's code
    changed on that step too) is not the update's."""
    if _runs_optimizer(evidence.left) == _runs_optimizer(evidence.right):
        return False
    return all(i in hits or pending[i].kind not in _OTHER_WORK for i in picked)


_OTHER_WORK = (CauseKind.STRUCTURE, CauseKind.COLLECTIVE)


# An optimizer's update of one weight is a handful of ops (SGD: a multiply and an add; Adam: ~30);
# outputs kept alive bring none, since what they read is computed anyway.
_UPDATE_WORK = 8


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    regions = [i for i, c in enumerate(pending) if c.kind in _REGIONS]
    # A clip whose norm is all-reduced (tensor parallelism) lands in the collectives' region.
    work = regions + [i for i, c in enumerate(pending) if c.kind is CauseKind.COLLECTIVE]
    if not work:
        return NOTHING
    # A clip's norm and its coefficient may land in separate regions: judged over all of them.
    everywhere = set().union(*(opcodes(evidence, pending[i]) for i in work if pending[i].kind not in TAPS))
    clip_everywhere = clip_ops(everywhere)
    # Outputs that bring a whole clip of their own (the norm, the capped coefficient and the
    # gradients it scales, returned as the updated weights that the pairing of same-shaped
    # outputs could not match): work, not a tensor kept alive.
    clipped_taps = [
        i
        for i in work
        if pending[i].kind in TAPS
        and len(pending[i].left) + len(pending[i].right) >= CLIP_WORK
        and scalar_clip(evidence, pending[i])
    ]
    # Outputs that bring an optimizer's whole update of their own (Adam returns the new weights
    # and both moments, so all its work lies under outputs only that graph has): work, not a
    # tensor kept alive, once the outputs that carry it are paired with nothing.
    updating_taps = [i for i in work if pending[i].kind in TAPS and _update_work(evidence, pending[i])]
    for name, test, summary, hint in _PATTERNS:
        hits = [
            i
            for i in work
            if pending[i].kind not in TAPS
            and (
                test(_library(evidence, pending[i]), opcodes(evidence, pending[i]))
                or (name == "clipping" and clip_everywhere and opcodes(evidence, pending[i]) & CLIP_OPS)
            )
        ] + (clipped_taps if name == "clipping" else updating_taps if name == "optimizer" else [])
        if name == "optimizer" and not any(
            (pending[i].kind is CauseKind.STRUCTURE or i in updating_taps)
            and opcodes(evidence, pending[i]) - _PLUMBING
            and not (pending[i].left and pending[i].right)
            for i in hits
        ):
            # An optimizer value alone (a learning rate) is no update on some steps only, nor are
            # updates that read other operands (wired to other weights): the update must be there
            # in one graph only.
            continue
        if not any(
            pending[i].kind in (CauseKind.STRUCTURE, CauseKind.COLLECTIVE, *TAPS)
            and len(pending[i].left) != len(pending[i].right)
            for i in hits
        ):
            # Changed instructions only (a divide by a constant where the other graph divides by
            # an input: a max norm of 1.0 baked): the clip runs in both, a value changed.
            continue
        if name == "rng" and _user_random(evidence, [pending[i] for i in hits]):
            continue
        if name == "clipping" and runs_clip(evidence.left) and runs_clip(evidence.right):
            # Both graphs clip: the clip runs on every step, over other gradients (a module
            # skipped on some steps has none); the work that differs is another pattern's.
            continue
        if hits:
            # What the work changes downstream (outputs added, removed or reordered, the update
            # that reads clipped gradients) is the same root reason.
            picked = [
                i
                for i, c in enumerate(pending)
                if i in hits or c.kind in _CASCADE or scalar_inputs(evidence, c)
            ]
            n = sum(pending[i].count for i in picked)
            setting: list[str] = []
            # Random work under an `if` that Python decides (a counter past a threshold) where no
            # mode switches and no probability is set: that `if` turns the work on.
            python_if = False
            if name == "rng" and not mode_switched(user_files(evidence)):
                summary, hint = DROPOUT_ZERO, fix("conditional_work.dropout_zero")
                setting = sets_dropout_p(user_files(evidence))
                python_if = not setting
            cause = merge(
                CauseKind.CONDITIONAL_WORK,
                f"{summary} ({n} difference(s))",
                [pending[i] for i in picked],
                hint=hint,
                info=name == "optimizer" and _update_alone(evidence, pending, picked, hits),
            )
            if setting:  # the user's line that sets p comes before the dropout's own lines
                cause = replace(cause, sources=tuple(dict.fromkeys([*setting, *cause.sources])))
            if (name == "optimizer" or python_if) and (
                branch := decided_branch(evidence, [pending[i] for i in picked], python=python_if)
                or decided_branch(evidence, [pending[i] for i in hits], python=python_if)
                or (name == "optimizer" and decided_branch(evidence, [], ran_at=_update_calls(evidence)))
            ):
                # No step every k: a device value read on the host picks the branch that updates
                # (the calls of all the work's helpers under it cited when they all sit there);
                # or, for random work, a Python condition does.
                cause = replace(
                    cause,
                    summary=f"{branch_summary(branch[0], branch[1])} ({n} difference(s))",
                    hint=BRANCH_HINT,
                    info=False,
                    sources=tuple(dict.fromkeys([branch[0], *branch[2], *cause.sources]))[:6],
                )
            return Recognized((cause,), frozenset(picked))
    # In an `if ... % k:` block, or in a helper of the user's called from one (a merge every k steps).
    files = user_files(evidence)
    sites = {
        i: site
        for i in regions
        if (
            site := next(
                (w for s in pending[i].sources if is_user_location(s) and (w := periodic_caller(s, files))),
                "",
            )
        )
    }
    periodic = list(sites)
    # Extra outputs alone are tensors kept alive (`output_added`); work inside the step is more:
    # a region, or outputs that write back inputs (weights merged or reset every k steps).
    entry = evidence.right.entry
    if any(
        pending[i].kind is CauseKind.STRUCTURE
        or (pending[i].kind is CauseKind.OUTPUT_ADDED and _writes_back(entry, pending, pending[i]))
        for i in periodic
    ):
        where = next(iter(sites.values()), "")
        # A helper's work, there because its call sits in the block: the `if` decides, then the call.
        # So it does when every line of the work sits in that block or in helpers called from it.
        called = next((i for i, w in sites.items() if w not in pending[i].sources), None)
        block = periodic_if(where)
        inside = all(
            periodic_if(periodic_caller(s, files)) == block
            for i in sites
            for s in pending[i].sources
            if is_user_location(s)
        )
        header = block if called is not None or inside else ""
        summary = (
            "work that runs only on some steps (an `if ... % k` block"
            + (f" at {header or where}" if where else "")
            + "): logging, metrics or an update done every k steps"
        )
        # The inputs only that work reads (a validation batch) come with it.
        users = users_of(entry)
        work = {n for i in periodic for n in pending[i].right}
        periodic += [
            j
            for j, c in enumerate(pending)
            if j not in periodic
            and c.kind is CauseKind.PARAMETER_ADDED
            and all(set(users.get(p, ())) <= work for p in c.right)
            and any(users.get(p) for p in c.right)
        ]
        # Scalars that flow into that work or into library work only this graph runs, citing no
        # line of the user's (the random seed and bounds of weights drawn again in the block by
        # `torch/nn/init.py`), with the regions they pass through.
        drawn = {
            n
            for c in pending
            if c.kind is CauseKind.STRUCTURE
            and one_sided(c)
            and not any(is_user_location(s) for s in c.sources)
            for n in c.right
        }
        seeds = [
            j
            for j, c in enumerate(pending)
            if j not in periodic
            and c.kind is CauseKind.PARAMETER_ADDED
            and scalar_inputs(evidence, c)
            and downstream(users, c.right) & (work | drawn)
        ]
        flow = set().union(*(downstream(users, pending[j].right) for j in seeds))
        # A region on the way: reached from them, or one whose results that flow reads.
        periodic += seeds + [
            j
            for j, c in enumerate(pending)
            if j not in periodic
            and j not in seeds
            and c.kind is CauseKind.STRUCTURE
            and (set(c.right) & flow or {u for n in c.right for u in users.get(n, ())} & (flow | work))
        ]
        # Outputs that come and go with that work (gradients it adds a term to) follow from it.
        lefts = {n for i in periodic for n in pending[i].left}
        rights = {n for i in periodic for n in pending[i].right}
        periodic += [
            j for j, c in enumerate(pending) if j not in periodic and taps_beside(evidence, c, lefts, rights)
        ]
        merged = merge(CauseKind.CONDITIONAL_WORK, summary, [pending[i] for i in periodic])
        lines = [x for x in (header, where) if x]
        cause = replace(merged, sources=tuple(dict.fromkeys([*lines, *merged.sources]))[:6])
        return Recognized((cause,), frozenset(periodic))
    branch = host_branch(evidence, pending, regions)
    return branch if branch.causes else switched_on(evidence, pending)


def _writes_back(entry, pending: tuple[Cause, ...], cause: Cause) -> bool:  # type: ignore[no-untyped-def]
    """Some output `cause` adds updates an input (a weight merged or reset every k steps, an EMA
    of the weights). A scalar input only B takes is no state written back: a logged ratio
    `lr * norm / norm` reads a Python value passed as data, of its shape, which the update rule
    would take for an update of it."""
    heads = [ch.right for ch in cause.changes if ch.what == "output" and ch.right]
    values = {p for c in pending if c.kind is CauseKind.PARAMETER_ADDED for p in c.right if _scalar(entry, p)}
    # An input has one new value a step: one that another output already updates (a running
    # mean's `m * 0.99 + x * 0.01`) is not written back by an added output that reads it
    # (`m * 0.99` kept alive).
    taken = {p for o, p in updated_inputs(entry, entry.outputs).items() if o not in heads}
    return bool(set(updated_inputs(entry, heads).values()) - values - taken)


def _scalar(entry, name: str) -> bool:  # type: ignore[no-untyped-def]
    return name in entry.param_number and strip_layout(entry.instruction(name).shape).endswith("[]")


def _with_hooks(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    """Work whose user lines are in a function registered as a hook (`clamp` of
    `model.body.register_forward_hook(clamp)` under `if step == 4:`) runs from the step that
    registers it: the registration decides, cited first."""
    found = _recognize(evidence, pending)
    return found._replace(causes=tuple(hooked(c) for c in found.causes))


RECOGNIZER = Recognizer("conditional_work", _with_hooks)
