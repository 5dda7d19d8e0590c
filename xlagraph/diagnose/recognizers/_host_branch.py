"""`conditional_work`'s host branch: extra work whose user lines sit in an `if` block that Python
decides on the host (a flag, a coin, a tensor's value read on the host), and the inputs, outputs
and regions that come with it."""

from __future__ import annotations

from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._beside_work import length_made_up, sizes_beside
from xlagraph.diagnose.recognizers._causes import TAPS, merge, one_sided, renamed, scalar_inputs
from xlagraph.diagnose.recognizers._dataflow import downstream
from xlagraph.diagnose.recognizers._guarded_calls import guarded_calls
from xlagraph.diagnose.recognizers._host_flag import flag_setters
from xlagraph.diagnose.recognizers._host_if import host_decided_if, read_before
from xlagraph.diagnose.recognizers._late_module import created_late
from xlagraph.diagnose.recognizers._periodic import enclosing_if, reads_tensor, synced_if
from xlagraph.diagnose.recognizers._source import calls_of_function, source_text, user_files
from xlagraph.diagnose.recognizers._traced_returns import TRACED
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of

__all__ = ["host_branch", "taken_branch"]


BRANCH_HINT = fix("conditional_work.host_branch")


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


def host_branch(evidence: Evidence, pending: tuple[Cause, ...], regions: list[int]) -> Recognized:
    """Extra work whose user lines sit in an `if` block: a condition decided on the host (data-
    dependent conditions on a tensor sync first, which `graph_break` names before this runs). A
    region whose ops carry no line of their own (a helper's ops) takes the `if` that the new
    inputs or outputs beside it come from, and so does a region with library lines only once
    another region has its `if`."""
    sided = [i for i in regions if pending[i].kind is CauseKind.STRUCTURE and one_sided(pending[i])]
    users = users_of(evidence.right.entry)
    if not sided:
        # Work whose result is the one output it adds (a batch flipped under `if random.random()
        # < p:`, still alive at the sync): its producer exists in one graph only, at a line in the if.
        # (A result returned and read by nothing else, a norm computed under `if with_norm:`, is
        # an output added, not work the step does; except in a traced function, for work that reads
        # inputs of its own: a validation batch scored under `if run_val:` is code the `if` picks,
        # where returning a value the step computes anyway is `returned_output`'s.)
        traced = evidence.context.trigger in TRACED
        fed = downstream(users, {p for c in pending if c.kind is CauseKind.PARAMETER_ADDED for p in c.right})
        sided = [
            i
            for i in regions
            if pending[i].kind is CauseKind.OUTPUT_ADDED
            and pending[i].right
            and not any(n in evidence.entry_match for n in pending[i].right)
            and _if_of(pending[i], calls=True)
            and (
                (traced and bool(fed & set(pending[i].right)))
                or _read_by_work(evidence, users, pending[i].right)
            )
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
        sided = [
            i
            for i in regions
            if pending[i].kind is CauseKind.PARAMETER_ADDED
            and scalar_inputs(evidence, pending[i])
            and any(is_user_location(s) and synced_if(s) for s in pending[i].sources)
            and _read_by_work(evidence, users, pending[i].right)
        ]
    if not sided:
        sided = _factor_paired_elsewhere(evidence, pending, regions, users)
    # Work of any size, a multiply even, that a device value read on the host decides: the `if`
    # around its lines reads a tensor, itself or in a function of the user's it calls.
    decided = {} if sided else _host_decided(evidence, pending, regions)
    if not sided and not decided:
        return NOTHING
    # (A helper's call under the `if` counts for a result the step reads, the batch it made.)
    found = (
        grown
        or {
            i: site
            for i in sided
            if (site := _if_of(pending[i], calls=pending[i].kind is CauseKind.OUTPUT_ADDED))
        }
        or {i: sites[0] for i, sites in decided.items()}
    )
    if not found:
        beside = next((w for c in pending if c.kind in _BESIDE and (w := _if_of(c))), "")
        found = dict.fromkeys(sided, beside) if beside else {}
    if not found and sided:
        # Work with no `if` around it (`x = hard(x) if hard_mode else x`) that a host-decided
        # test still picks: a flag set from a host read.
        decided = _host_decided(evidence, pending, regions)
        found = {i: sites[0] for i, sites in decided.items()}
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
    reads = next((sites[1:] for sites in decided.values() if sites[0] == site), ())
    summary = branch_summary(site, reads)
    # The input that work replaced (the unflipped batch the model read directly) goes with it.
    shapes = {strip_layout(ins.shape) for i in found for _, ins in evidence.instructions(pending[i])}
    # And the ops rewired to read its result (the model's first conv reading the flipped batch);
    # where the other graph is the one with the work (a penalty dropped once the loss falls), its
    # ops that read the work's result (the gradient sum the penalty's gradient joined).
    readers = downstream(users, {n for i in found for n in pending[i].right})
    readers_left = downstream(users_of(evidence.left.entry), {n for i in found for n in pending[i].left})
    # A Python number passed as data that only the work reads (the 0.5 of `0.5 * x + 0.5 *
    # x.roll(1)` under a flag) is the work's factor: it comes and goes with it.
    work = {n for i in found for n in pending[i].right}
    picked = list(found) + [
        i
        for i, c in enumerate(pending)
        if i not in found
        and (
            c.kind in TAPS
            or (c.kind in _BESIDE and _if_of(c, calls=bool(grown)) == site)
            or (
                c.kind in _INPUTS
                and {strip_layout(ins.shape) for _, ins in evidence.instructions(c)} <= shapes
            )
            or (c.kind is CauseKind.STRUCTURE and bool(set(c.right) & readers or set(c.left) & readers_left))
            or (
                c.kind is CauseKind.PARAMETER_ADDED
                and scalar_inputs(evidence, c)
                and all(users.get(p) and set(users[p]) <= work for p in c.right)
            )
        )
    ]
    # What computes with the new inputs taken with it is that work too (a momentum buffer made
    # under `if buf is None:`, read from the next step on), wherever the matching split it.
    fed = downstream(
        users, {p for i in picked if pending[i].kind is CauseKind.PARAMETER_ADDED for p in pending[i].right}
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
    merged = merge(CauseKind.CONDITIONAL_WORK, summary, [pending[i] for i in picked], hint=BRANCH_HINT)
    # The helper's call under the `if` (its ops carry the helper's own lines) follows the `if`.
    called = [g[0] for s in merged.sources if (g := guarded_calls(s))[1:2] == [site]]
    # A flag set from a host read: the `if` that sets it and the assignment follow its test.
    setters = flag_setters(site)[1]
    cause = replace(merged, sources=tuple(dict.fromkeys([site, *setters, *called, *merged.sources]))[:6])
    return Recognized((_made_late(evidence, cause, site, [pending[i] for i in picked]),), frozenset(picked))


def taken_branch(branch: tuple[str, ...], line: str, said: str, causes: list[Cause]) -> Cause:
    """The work of a step that took a host-decided branch (`branch`: the `if`, the lines that read
    its test) whose code synced at `line`, `said` how: the `if` is where the step chose it (the sync
    is only where that work begins or ends), for `graph_break`'s cut and `branch_rest`'s rest."""
    site = branch[0]
    test = source_text(site).split("#", 1)[0].strip()
    summary = (
        f"work only some steps do: `{test[:80]}` at {site} reads a device value on the host and took "
        f"its branch on this step, whose code {said}"
    )
    sources = tuple(dict.fromkeys((*branch, line)))
    return merge(CauseKind.CONDITIONAL_WORK, summary, causes, hint=BRANCH_HINT, sources=sources)


def branch_summary(site: str, reads: tuple[str, ...]) -> str:
    """What an `if` at `site` decides; `reads`: where the functions its test calls read a tensor."""
    text = source_text(site).split("#", 1)[0].strip()
    names, setters = flag_setters(site)
    if setters:
        flags = ", ".join(f"`{n}`" for n in sorted(names))
        return (
            f"work only one graph does, picked by `{text[:80]}` at {site}: the Python flag {flags} it "
            f"tests is set at {', '.join(setters[:3])} from a tensor's value read on the host (an "
            "implicit sync that also cuts the step), so the host decides which code the step traces"
        )
    # (a test on a name set from a host read above it: `value = gnorm.item()`, `if value > t:`)
    if not reads and not reads_tensor(text):
        reads = read_before(site)
    decides = (
        "a tensor's value read on the host (an implicit sync that also cuts the step) decides"
        if reads_tensor(text)
        else f"a tensor's value read on the host at {', '.join(reads)} (an implicit sync that also cuts the "
        "step) decides"
        if reads
        else "a condition decided in Python on the host picks"
    )
    return f"work only one graph does, inside `{text[:80]}` at {site}: {decides} which code the step traces"


def decided_branch(
    evidence: Evidence, hits: list[Cause], python: bool = False, ran_at: tuple[str, ...] = ()
) -> tuple[str, tuple[str, ...], tuple[str, ...]] | None:
    """(the `if`, the lines where its test reads the device, the calls of the user's helpers in
    its blocks) when every user line of the work sits in a block of one `if` that a device value
    read on the host decides, itself or in a helper whose every call sits there (`scaler.backoff()`
    under `if scaler.found_inf(params).item():`, `scaler.unscale_(params)` in its `else`); else None.
    With `python`, any `if` of the step counts (`if samples_seen >= warmup:`, a Python counter
    past a threshold): the host decides there too, without reading the device. `ran_at`: user
    lines that ran the work where it cites library lines only (the `opt.step()` of an update)."""
    files = user_files(evidence)

    def guard(loc: str) -> tuple[str, ...]:
        found = host_decided_if(loc, files)
        return found or ((site,) if python and (site := enclosing_if(loc)) else ())

    decided: list[tuple[str, ...]] = []
    calls: list[str] = []
    for loc in dict.fromkeys([*(s for c in hits for s in c.sources if is_user_location(s)), *ran_at]):
        own = guard(loc)
        if own:
            decided.append(own)
            continue
        callers = calls_of_function(loc, files, limit=3)
        guards = [guard(c) for c in callers]
        if not callers or not all(guards):
            return None
        decided += guards
        calls += callers
    if not decided or len({d[0] for d in decided}) != 1:
        return None
    return (decided[0][0], decided[0][1:], tuple(dict.fromkeys(calls)))


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
        if (c.kind is not CauseKind.STRUCTURE or len(c.left) == len(c.right)) and c.kind not in TAPS:
            continue
        sites = next((w for s in c.sources if is_user_location(s) and (w := host_decided_if(s, files))), ())
        if sites:
            found[i] = sites
    return found


def _factor_paired_elsewhere(
    evidence: Evidence, pending: tuple[Cause, ...], regions: list[int], users: dict[str, list[str]]
) -> list[int]:
    """A factor passed as data under an `if` that reads a tensor on the host (`if norm.item() >
    limit:` over `for p in params: p.grad.mul_(limit / norm)`), where the step already took a
    scalar of the same type (the optimizer's learning rate): the matcher pairs the new factor with
    that scalar, so the scaling shows as changed ops at the `if`'s lines and the learning rate as
    the scalar input added. Both are the `if`'s work: the changed regions (each user line under
    one such `if`, some op reading a scalar input of the new graph) and the scalar inputs added
    with no line of the user's."""
    entry = evidence.right.entry
    scalars = {p for p in entry.param_number if strip_layout(entry.instruction(p).shape).endswith("[]")}
    fed = downstream(users, scalars)
    changed = [
        i
        for i in regions
        if pending[i].kind is CauseKind.STRUCTURE
        and pending[i].right
        and not one_sided(pending[i])
        and bool(set(pending[i].right) & fed)
    ]
    ifs = {synced_if(s) for i in changed for s in pending[i].sources if is_user_location(s)}
    if not changed or len(ifs) != 1 or "" in ifs:
        return []
    added = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.PARAMETER_ADDED
        and scalar_inputs(evidence, c)
        and not any(is_user_location(s) for s in c.sources)
    ]
    return [*changed, *added] if added else []


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
    return renamed(cause, CauseKind.PARAMETER_ADDED, summary, sources=sources)


_INPUTS = (CauseKind.PARAMETER_ADDED, CauseKind.PARAMETER_REMOVED)
# New inputs or outputs the extra work brings (a loss weight passed in, its term kept alive).
_BESIDE = (*_INPUTS, *TAPS)
