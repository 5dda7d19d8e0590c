"""`conditional_work`: work present only on some steps. `if step % k == 0:` gradient clipping,
logging or metrics; an optimizer step every k steps (gradient accumulation); dropout present in
`train()` and absent in `eval()`.

Evidence: a region of instructions that comes from gradient clipping, from optimizer code, or
from random-number ops; or a user line inside an `if ... % ...:` block.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_user_location, split_location
from xlagraph.diagnose.recognizers._beside_work import length_made_up, sizes_beside
from xlagraph.diagnose.recognizers._causes import merge, with_number_origin
from xlagraph.diagnose.recognizers._clip import CLIP_OPS, CLIP_WORK, clip_ops, runs_clip, scalar_clip
from xlagraph.diagnose.recognizers._dataflow import RESTATES, downstream, opcodes, updated_inputs
from xlagraph.diagnose.recognizers._guarded_calls import guarded_calls
from xlagraph.diagnose.recognizers._host_if import host_decided_if
from xlagraph.diagnose.recognizers._late_module import created_late
from xlagraph.diagnose.recognizers._periodic import (
    enclosing_if,
    periodic_caller,
    periodic_if,
    reads_tensor,
    synced_if,
)
from xlagraph.diagnose.recognizers._source import (
    BUILDERS,
    calls_of_function,
    enclosing_function,
    lines_matching,
    source_text,
    user_files,
)
from xlagraph.diagnose.recognizers._statements import enclosing
from xlagraph.diagnose.recognizers._user_flow import hook_registrations
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]

_REGIONS = (
    CauseKind.STRUCTURE,
    CauseKind.OUTPUT_ADDED,
    CauseKind.OUTPUT_REMOVED,
    CauseKind.PARAMETER_ADDED,
    CauseKind.PARAMETER_REMOVED,
)
_CASCADE = (
    CauseKind.COLLECTIVE,  # the all-reduce of a norm, or of gradients, on those steps only
    CauseKind.STRUCTURE,
    CauseKind.OUTPUT_ADDED,
    CauseKind.OUTPUT_REMOVED,
    CauseKind.OUTPUT_PERMUTATION,
    CauseKind.LAYOUT,
)
# Extra or missing outputs read values the step computes anyway (a kept-alive activation after a
# dropout): where they come from says nothing about work done on some steps only.
_TAPS = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)
_RNG = frozenset({"rng", "rng-bit-generator", "rng-get-and-update-state"})
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
        lambda files, ops: bool(ops & _RNG) or any("dropout" in f for f in files),
        "random-number ops (dropout) only in one graph: model.train() / model.eval() toggled",
        fix("conditional_work.dropout"),
    ),
    (
        "optimizer",
        lambda files, ops: any("/optim/" in f for f in files),
        "the optimizer's update runs only on some steps (gradient accumulation, a step every k)",
        fix("conditional_work.accumulation"),
    ),
)


# Dropout leaves the graph in eval() mode, and at p=0: where the user's code never switches
# modes, a probability that reached 0 is what removed it (telling them to call train() would
# change nothing).
# A statement that calls it (`model.eval()`, `self.net.train(False)`), not prose in a docstring.
_MODE_SWITCH = re.compile(r"^\s*[\w.\[\]]*\w\.(eval|train)\s*\(")
_DROPOUT_ZERO = (
    "random-number ops (dropout) only in one graph, and the script never calls eval(): a dropout "
    "probability reached 0.0"
)


# A random tensor of the user's own (torch.randn before the loop, computed in the first graph
# and an input later), not dropout: no mode or probability to fix.
_RANDOM_CALL = re.compile(
    r"\btorch\.(randn|rand|randint|randperm|normal|bernoulli)\b|\.(normal_|uniform_|random_)\("
)


def _user_random(evidence: Evidence, hits: list[Cause]) -> bool:
    """The random ops come from the user's own random tensors or from weights drawn again
    (`torch/nn/init.py`: adapters reset every k steps), with no dropout anywhere."""
    said = [f for c in hits for f in _library(evidence, c)]
    if any("dropout" in f for f in said):
        return False
    if any(f.replace("\\", "/").endswith("torch/nn/init.py") for f in said):
        return True
    lines = [loc for c in hits for loc in c.sources if is_user_location(loc)]
    return bool(lines) and all(_RANDOM_CALL.search(source_text(loc)) for loc in lines)


def _library(evidence: Evidence, cause: Cause) -> list[str]:
    """The files the instructions come from, the text of the library lines they cite (the line
    of `F.dropout` says `dropout` where its file is only `functional.py`), and the names of the
    user's functions they sit in (a `clip_grad_norm_` of the user's own)."""
    names = [enclosing_function(*split_location(loc)) for loc in cause.sources]
    return (
        evidence.library_files(cause) + [source_text(loc) for loc in cause.library] + [n for n in names if n]
    )


def _update_work(evidence: Evidence, cause: Cause) -> bool:
    """Outputs added or dropped whose own instructions (those computing only them) are an
    optimizer's arithmetic, at least `_UPDATE_WORK` of them, while the other graph runs no
    optimizer code at all: the update is there on some steps only. (Weights frozen or unfrozen
    change which weights the optimizer updates; it runs in both graphs.)"""
    found = evidence.instructions(cause)
    computing = [ins for _, ins in found if ins.opcode not in _PLUMBING]
    if len(computing) < _UPDATE_WORK or not any("/optim/" in f for f in evidence.library_files(cause)):
        return False
    other = evidence.left if cause.kind is CauseKind.OUTPUT_ADDED else evidence.right
    return not _runs_optimizer(other)


def _runs_optimizer(canon: CanonicalModule) -> bool:
    """Some instruction of the entry comes from optimizer code (its innermost frame)."""
    module = canon.module
    return any(
        "/optim/" in frame.file.replace("\\", "/")
        for ins in canon.entry.computation.instructions
        for frame in module.frames_of(ins)[:1]
    )


# An optimizer's update of one weight is a handful of ops (SGD: a multiply and an add; Adam: ~30);
# outputs kept alive bring none, since what they read is computed anyway.
_UPDATE_WORK = 8


def _scalars(evidence: Evidence, cause: Cause) -> bool:
    """Inputs added or dropped that are all scalars: the factors of that work (a max norm)."""
    if cause.kind not in (CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED):
        return False
    found = evidence.instructions(cause)
    return bool(found) and all(strip_layout(ins.shape).endswith("[]") for _, ins in found)


# `m.p = p`, `model.drop.p = 0.0`, `setattr(m, "p", p)`: a dropout module's probability set.
_SETS_P = re.compile(r"^\s*[\w.\[\]]*\w\.p\s*=(?!=)|\bsetattr\([^,]+,\s*['\"]p['\"]")


def _sets_dropout_p(files: list[str]) -> list[str]:
    """Where the user's code sets a dropout probability outside the methods that build a module
    (`__init__` gives the first value), and the call of the function that does it (a scheduler's
    `step(step)` in the loop): at most two such lines, else none (the text does not say which)."""
    sets = lines_matching(files, _SETS_P, limit=8)
    found = [loc for loc in sets if enclosing_function(*split_location(loc)) not in BUILDERS]
    if not found or len(found) > 2:
        return []
    calls = [c for loc in found for c in calls_of_function(loc, files, limit=1)]
    return list(dict.fromkeys([*found, *calls]))


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    regions = [i for i, c in enumerate(pending) if c.kind in _REGIONS]
    # A clip whose norm is all-reduced (tensor parallelism) lands in the collectives' region.
    work = regions + [i for i, c in enumerate(pending) if c.kind is CauseKind.COLLECTIVE]
    if not work:
        return NOTHING
    # A clip's norm and its coefficient may land in separate regions: judged over all of them.
    everywhere = set().union(*(opcodes(evidence, pending[i]) for i in work if pending[i].kind not in _TAPS))
    clip_everywhere = clip_ops(everywhere)
    # Outputs that bring a whole clip of their own (the norm, the capped coefficient and the
    # gradients it scales, returned as the updated weights that the pairing of same-shaped
    # outputs could not match): work, not a tensor kept alive.
    clipped_taps = [
        i
        for i in work
        if pending[i].kind in _TAPS
        and len(pending[i].left) + len(pending[i].right) >= CLIP_WORK
        and scalar_clip(evidence, pending[i])
    ]
    # Outputs that bring an optimizer's whole update of their own (Adam returns the new weights
    # and both moments, so all its work lies under outputs only that graph has): work, not a
    # tensor kept alive, once the outputs that carry it are paired with nothing.
    updating_taps = [i for i in work if pending[i].kind in _TAPS and _update_work(evidence, pending[i])]
    for name, test, summary, hint in _PATTERNS:
        hits = [
            i
            for i in work
            if pending[i].kind not in _TAPS
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
            pending[i].kind in (CauseKind.STRUCTURE, CauseKind.COLLECTIVE, *_TAPS)
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
                i for i, c in enumerate(pending) if i in hits or c.kind in _CASCADE or _scalars(evidence, c)
            ]
            n = sum(pending[i].count for i in picked)
            setting: list[str] = []
            if name == "rng" and not lines_matching(user_files(evidence), _MODE_SWITCH, limit=1):
                summary, hint = _DROPOUT_ZERO, fix("conditional_work.dropout_zero")
                setting = _sets_dropout_p(user_files(evidence))
            cause = merge(
                CauseKind.CONDITIONAL_WORK,
                f"{summary} ({n} difference(s))",
                [pending[i] for i in picked],
                hint=hint,
            )
            if setting:  # the user's line that sets p comes before the dropout's own lines
                cause = replace(cause, sources=tuple(dict.fromkeys([*setting, *cause.sources])))
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
        called = next((i for i, w in sites.items() if w not in pending[i].sources), None)
        header = periodic_if(where) if called is not None else ""
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
            and _one_sided(c)
            and not any(is_user_location(s) for s in c.sources)
            for n in c.right
        }
        seeds = [
            j
            for j, c in enumerate(pending)
            if j not in periodic
            and c.kind is CauseKind.PARAMETER_ADDED
            and _scalars(evidence, c)
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
        merged = merge(CauseKind.CONDITIONAL_WORK, summary, [pending[i] for i in periodic])
        lines = [x for x in (header, where) if x]
        cause = replace(merged, sources=tuple(dict.fromkeys([*lines, *merged.sources]))[:6])
        return Recognized((cause,), frozenset(periodic))
    branch = _host_branch(evidence, pending, regions)
    return branch if branch.causes else _switched_on(evidence, pending)


def _opcodes_of(entry, names: set[str]) -> set[str]:  # type: ignore[no-untyped-def]
    return {entry.instruction(n).opcode for n in names}


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


_SWITCH_HINT = fix("conditional_work.switched_on")


def _switched_on(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    """New scalar inputs that bring work of their own (many ops only in B read them): a Python
    option that library code skips at 0.0 and runs otherwise (`F.cross_entropy(label_smoothing=s)`).
    Or the other way: the inputs and their work gone, the option annealed to exactly 0.0."""
    on = _switched(evidence, pending, on=True)
    return on if on.causes else _switched(evidence, pending, on=False)


def _switched(evidence: Evidence, pending: tuple[Cause, ...], on: bool) -> Recognized:
    # The side that runs the work: B where the option turns on, A where it turns off.
    side = evidence.right if on else evidence.left
    added, gone = (CauseKind.PARAMETER_ADDED, CauseKind.OUTPUT_REMOVED)
    if not on:
        added, gone = (CauseKind.PARAMETER_REMOVED, CauseKind.OUTPUT_ADDED)

    def names(c: Cause) -> tuple[str, ...]:
        return c.right if on else c.left

    def other(c: Cause) -> tuple[str, ...]:
        return c.left if on else c.right

    users = users_of(side.entry)
    taps = [i for i, c in enumerate(pending) if c.kind in _TAPS]
    if any(pending[i].kind is gone for i in taps):
        return NOTHING  # results gone too: not an option switched
    matched = evidence.entry_match if on else evidence.entry_match_left
    picked, work = [], set()
    for i, c in enumerate(pending):
        if c.kind is added and _scalars(evidence, c):
            reach = downstream(users, names(c))
            own = {n for n in reach if n not in matched}
            # Work spread over many small regions (AdamW's decay of each weight: a multiply
            # before an update the matcher pairs) counts by how much each region grew. Random
            # numbers are dropout's, switched by train()/eval() or p: a pattern of its own.
            grown = [
                k
                for k in pending
                if k.kind is CauseKind.STRUCTURE
                and len(names(k)) > len(other(k))
                and set(names(k)) & reach
                and not opcodes(evidence, k) & _RNG
            ]
            if len(own) + sum(len(names(k)) - len(other(k)) for k in grown) >= _SWITCH_OPS:
                picked.append(i)
                work |= own | {n for k in grown for n in names(k)}
    if not picked:
        return NOTHING
    # Results only that side has are the option's only where they come from its work (what a
    # compiled forward saves for its backward) and update no input (weights trained from now on).
    entry = side.entry
    reach = downstream(users, [p for i in picked for p in names(pending[i])])
    kept = {n for i in taps for n in names(pending[i])} & set(entry.outputs)
    if not kept <= reach or updated_inputs(entry, sorted(kept)):
        return NOTHING
    picked += taps + [
        j
        for j, c in enumerate(pending)
        if j not in picked and c.kind is CauseKind.STRUCTURE and set(names(c)) & work
    ]
    n = sum(len(names(pending[i])) for i in picked if pending[i].kind is added)
    summary = (
        f"work that runs from this step on, switched on by {n} Python value(s) passed as data: an "
        "option library code skips at 0 (a weight decay, label smoothing, a loss term's weight) now set"
        if on
        else f"work that stops from this step on, switched off by {n} Python value(s) passed as data "
        "that reached 0: an option library code skips at 0 (a weight decay, label smoothing, a loss "
        "term's weight) annealed to exactly 0"
    )
    cause = merge(CauseKind.CONDITIONAL_WORK, summary, [pending[i] for i in picked], hint=_SWITCH_HINT)
    named = with_number_origin(cause)
    torch_option = bool(cause.sources) and all(s.startswith("torch/") for s in cause.sources)
    if not on and ((named is cause and not torch_option) or _opcodes_of(side.entry, work) & _RNG):
        # Work gone is an option at 0 where torch's own code skips it (label_smoothing, a weight
        # decay) or the user's line reads a number the script computes (a schedule), not where
        # a model's code stops reading a value; random work gone is dropout's pattern.
        return NOTHING
    return Recognized((named,), frozenset(picked))


# Ops only the new graph runs on the new values before it is work of its own, not a value read
# where the other graph read a constant.
_SWITCH_OPS = 8


_BRANCH_HINT = fix("conditional_work.host_branch")
# Syncs of a function `torch_xla.compile` traces whole (`report.trigger_of`'s label): its outputs are
# what it returns. (torch.compile's graphs are compared with others the bridge made: left out.)
_TRACED = ("torch_xla.compile",)


def _one_sided(cause: Cause) -> bool:
    """Work one graph does and the other does not: many instructions on one side, few on the other."""
    big, small = sorted((len(cause.left), len(cause.right)), reverse=True)
    return big >= 5 and big >= 3 * max(1, small)


def _if_of(cause: Cause, calls: bool = False) -> str:
    """The `if` around the cause's user lines; with `calls`, else the one around every call of
    the helper function they sit in (`images = fgsm(...)` under `if epoch >= k:`)."""
    # (an `if` reading a tensor on the host decides through a loop in its block: `for p in params:`)
    found = next(
        (w for s in cause.sources if is_user_location(s) and (w := enclosing_if(s) or synced_if(s))), ""
    )
    if found or not calls:
        return found
    for s in cause.sources:
        if not is_user_location(s):
            continue
        calls = calls_of_function(s, limit=3)
        guards = [enclosing_if(c) for c in calls]
        if calls and all(guards) and len(set(guards)) == 1:
            return guards[0]
        # Called on every step and again under an `if` (the loss helper the validation reuses):
        # work one graph has more of is the guarded call's.
        guarded = guarded_calls(s)
        if len(guarded) == 2:
            return guarded[1]
    return ""


def _read_by_work(evidence: Evidence, users: dict[str, list[str]], names: tuple[str, ...]) -> bool:
    """Some op other than the result tuple, and outside `names`, reads what `names` compute."""
    entry = evidence.right.entry
    outside = downstream(users, names) - set(names)
    return any(entry.instruction(u).opcode not in ("tuple", "get-tuple-element") for u in outside)


def _host_branch(evidence: Evidence, pending: tuple[Cause, ...], regions: list[int]) -> Recognized:
    """Extra work whose user lines sit in an `if` block: a condition decided on the host (data-
    dependent conditions on a tensor sync first, which `graph_break` names before this runs). A
    region whose ops carry no line of their own (a helper's ops) takes the `if` that the new
    inputs or outputs beside it come from, and so does a region with library lines only once
    another region has its `if`."""
    sided = [i for i in regions if pending[i].kind is CauseKind.STRUCTURE and _one_sided(pending[i])]
    if not sided:
        # Work whose result is the one output it adds (a batch flipped under `if random.random()
        # < p:`, still alive at the sync): its producer exists in one graph only, at a line in the if.
        # (A result returned and read by nothing else, a norm computed under `if with_norm:`, is
        # an output added, not work the step does; except in a traced function: what it returns
        # is no tensor kept alive, an `if` in it picks the code traced.)
        users = users_of(evidence.right.entry)
        traced = evidence.context.trigger in _TRACED
        sided = [
            i
            for i in regions
            if pending[i].kind is CauseKind.OUTPUT_ADDED
            and pending[i].right
            and not any(n in evidence.entry_match for n in pending[i].right)
            and _if_of(pending[i], calls=True)
            and (traced or _read_by_work(evidence, users, pending[i].right))
        ]
    grown: dict[int, str] = {}
    if not sided:
        # Small regions that grow, each in a helper of the user's that is called under one `if`
        # only (`add_grad_clamp(model, limit)` under `if step == clamp_from:`, a hook it registers
        # clamping every gradient): work that `if` switches on, however small each region is.
        grown = {
            i: site
            for i in regions
            if pending[i].kind is CauseKind.STRUCTURE
            and len(pending[i].right) > len(pending[i].left)
            and (site := _if_of(pending[i], calls=True))
            and not _if_of(pending[i])
        }
        if len(grown) >= 2 and len(set(grown.values())) == 1:
            sided = list(grown)
        else:
            grown = {}
    if not sided:
        # A Python number passed as data and the work only it feeds, at a line under an `if` that
        # reads a tensor on the host (`if norm.item() > spike:` over `for p in params:
        # p.grad.mul_(damp)`): the factor is that `if`'s work, not a tensor made late.
        users = users_of(evidence.right.entry)
        sided = [
            i
            for i in regions
            if pending[i].kind is CauseKind.PARAMETER_ADDED
            and _scalars(evidence, pending[i])
            and any(is_user_location(s) and synced_if(s) for s in pending[i].sources)
            and _read_by_work(evidence, users, pending[i].right)
        ]
    # Work of any size, a multiply even, that a device value read on the host decides: the `if`
    # around its lines reads a tensor, itself or in a function of the user's it calls.
    decided = {} if sided else _host_decided(evidence, pending, regions)
    if not sided and not decided:
        return NOTHING
    # (A helper's call under the `if` counts for a result the step reads, the batch it made.)
    found = grown or {
        i: site
        for i in sided
        if (site := _if_of(pending[i], calls=pending[i].kind is CauseKind.OUTPUT_ADDED))
    } or {i: sites[0] for i, sites in decided.items()}
    if not found:
        beside = next((w for c in pending if c.kind in _BESIDE and (w := _if_of(c))), "")
        found = dict.fromkeys(sided, beside) if beside else {}
    if not found:
        return NOTHING
    site = next(iter(found.values()))
    # A check nested in the block of a condition read from a tensor (`if p.grad is not None:`
    # under `if total.item() > max_norm:`) is not what decides: the tensor's condition is.
    site = synced_if(site) or site
    # Work with library lines only (a decomposition's backward) beside the `if` block's work is
    # that work's own ops: the backward of the extra term.
    found |= {
        i: site for i in sided if i not in found and not any(is_user_location(s) for s in pending[i].sources)
    }
    text = source_text(site).split("#", 1)[0].strip()
    reads = next((sites[1:] for sites in decided.values() if sites[0] == site), ())
    decides = (
        "a tensor's value read on the host (an implicit sync that also cuts the step) decides"
        if reads_tensor(text)
        else f"a tensor's value read on the host at {', '.join(reads)} (an implicit sync that also cuts the "
        "step) decides"
        if reads
        else "a condition decided in Python on the host picks"
    )
    summary = f"work only one graph does, inside `{text[:80]}` at {site}: {decides} which code the step "
    summary += "traces"
    # The input that work replaced (the unflipped batch the model read directly) goes with it.
    shapes = {strip_layout(ins.shape) for i in found for _, ins in evidence.instructions(pending[i])}
    # And the ops rewired to read its result (the model's first conv reading the flipped batch).
    readers = downstream(users_of(evidence.right.entry), {n for i in found for n in pending[i].right})
    picked = list(found) + [
        i
        for i, c in enumerate(pending)
        if i not in found
        and (
            c.kind in _TAPS
            or (c.kind in _BESIDE and _if_of(c, calls=bool(grown)) == site)
            or (
                c.kind in _INPUTS
                and {strip_layout(ins.shape) for _, ins in evidence.instructions(c)} <= shapes
            )
            or (c.kind is CauseKind.STRUCTURE and bool(set(c.right) & readers))
        )
    ]
    # What computes with the new inputs taken with it is that work too (a momentum buffer made
    # under `if buf is None:`, read from the next step on), wherever the matching split it.
    fed = downstream(
        users_of(evidence.right.entry),
        {p for i in picked if pending[i].kind is CauseKind.PARAMETER_ADDED for p in pending[i].right},
    )
    picked += [
        i
        for i, c in enumerate(pending)
        if i not in picked and c.kind is CauseKind.STRUCTURE and bool(set(c.right) & fed)
    ]
    # Sizes in library code that count what the work brings, and an input whose length makes up
    # for the work's tokens, follow from it too.
    left = {n for i in picked for n in pending[i].left}
    right = {n for i in picked for n in pending[i].right}
    picked += [
        i
        for i, c in enumerate(pending)
        if i not in picked
        and (sizes_beside(evidence, c, left, right) or length_made_up(evidence, c, left, right))
    ]
    merged = merge(CauseKind.CONDITIONAL_WORK, summary, [pending[i] for i in picked], hint=_BRANCH_HINT)
    # The helper's call under the `if` (its ops carry the helper's own lines) follows the `if`.
    called = [g[0] for s in merged.sources if (g := guarded_calls(s))[1:2] == [site]]
    cause = replace(merged, sources=tuple(dict.fromkeys([site, *called, *merged.sources]))[:6])
    return Recognized((_made_late(evidence, cause, site, [pending[i] for i in picked]),), frozenset(picked))


def _host_decided(
    evidence: Evidence, pending: tuple[Cause, ...], regions: list[int]
) -> dict[int, tuple[str, ...]]:
    """Regions of work one graph does more of, whose user lines sit in an `if` that a device value
    read on the host decides (`host_decided_if`): each with that `if` and the lines that read."""
    files = user_files(evidence)
    found: dict[int, tuple[str, ...]] = {}
    for i in regions:
        c = pending[i]
        # Work one side does, or a result alive on one side only that a line of the `if` made (a
        # loss damped under `if loss.item() > limit:` where torch.compile's graph break leaves
        # the damped loss to the lazy graph that backpropagates it): not a tensor kept alive.
        if (c.kind is not CauseKind.STRUCTURE or len(c.left) == len(c.right)) and c.kind not in _TAPS:
            continue
        sites = next((w for s in c.sources if is_user_location(s) and (w := host_decided_if(s, files))), ())
        if sites:
            found[i] = sites
    return found


def _made_late(evidence: Evidence, cause: Cause, site: str, picked: list[Cause]) -> Cause:
    """The `if` tests a module made mid-run (`self.head = nn.Linear(...)` in a method the loop
    calls) and the new graph takes weights and returns their updates: new weights from this
    step on, cited where the module is made, rather than a condition that flips."""
    if not any(c.kind is CauseKind.PARAMETER_ADDED for c in picked) or not any(
        c.kind is CauseKind.OUTPUT_ADDED for c in picked
    ):
        return cause
    made = created_late(site, user_files(evidence))
    if not made:
        return cause
    text = source_text(made[0]).split("#", 1)[0].strip()
    summary = (
        f"weights made mid-run: `{text[:80]}` at {made[0]} creates a module, used under `"
        f"{source_text(site).split('#', 1)[0].strip()[:60]}` at {site} from this step on: its "
        f"weights are new inputs and their updates new outputs ({cause.count} difference(s))"
    )
    sources = tuple(dict.fromkeys([*made, *cause.sources]))[:6]
    return replace(cause, kind=CauseKind.PARAMETER_ADDED, summary=summary, hint=_LATE_HINT, sources=sources)


_LATE_HINT = fix("parameter_added")


_INPUTS = (CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED)
# New inputs or outputs the extra work brings (a loss weight passed in, its term kept alive).
_BESIDE = (*_INPUTS, *_TAPS)


def _with_hooks(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    """Work whose user lines are in a function registered as a hook (`clamp` of
    `model.body.register_forward_hook(clamp)` under `if step == 4:`) runs from the step that
    registers it: the registration decides, cited first."""
    found = _recognize(evidence, pending)
    return found._replace(causes=tuple(_hooked(c) for c in found.causes))


def _hooked(cause: Cause) -> Cause:
    hooks = hook_registrations([s for s in cause.sources if is_user_location(s)][:3])
    if not hooks:
        return cause
    sources = tuple(dict.fromkeys([*hooks, *cause.sources]))[:6]
    file, line = split_location(hooks[0])
    if not any(isinstance(s, (ast.If, ast.For, ast.While)) for s, _ in enclosing(file, line)):
        return replace(cause, sources=sources)  # registered once, up front: the work's own reason stands
    text = source_text(hooks[0]).split("#", 1)[0].strip()
    summary = (
        f"work that runs from this step on: a hook registered mid-run by `{text[:80]}` at {hooks[0]} "
        f"adds its ops (and their backward) to every step after it ({cause.count} difference(s))"
    )
    return replace(cause, summary=summary, sources=sources, hint=_BRANCH_HINT)


RECOGNIZER = Recognizer("conditional_work", _with_hooks)
