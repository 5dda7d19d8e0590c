"""`conditional_work` for a part of the model skipped on the host. At random: transformers' LayerDrop
(`dropout_probability = torch.rand([])`, then `if dropout_probability < self.layerdrop: continue`
or `if not to_drop: layer(...)`; wav2vec2, BART, Whisper, M2M100 and some 70 other models), and
stochastic depth written the same way with `random.random()` in the user's own model.

The draw happens in Python, so the graph only shows its outcome: one graph runs a layer's forward
and backward (and updates its weights) and the other does not. Evidence: a region of work one
graph does (counting instructions the matching left unpaired: the layers after the skipped one
only read other operands), whose Python frames, walked outwards, reach an `if` that follows a
host-side random draw. Every set of skipped layers is a graph of its own, so this never settles.

Or decided by the data: an early exit (`if conf.item() > t: break` in the loop over blocks, a
`return` before the deeper layers) whose condition reads a value from the device on the host
(an implicit sync that also cuts the step). The layers it skipped, their weights, updates and
the loss's changed average follow from that `if`, named at it. The same exit in a loop that
repeats one block (a fixed-point or refinement loop, `if rel.item() < tol: break`) decides how
many iterations a step traces: no weight comes or goes, the extra iteration is a few ops the
matching pairs as changed, and every line of the loop makes as many ops or more in one graph
(the step's graph, and the condition's own graph at each iteration, cut at its read).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.causes import INTERFACE, Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import (
    is_optimizer_code,
    is_user_location,
    location,
    source_line,
    source_lines,
    sources_key,
    split_location,
    user_frames,
)
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._early_exits import (
    Exit,
    exit_sites,
    exited_at,
    leaves_work,
    step_syncs,
    synced_lines,
)
from xlagraph.diagnose.recognizers._source import lines_matching, source_text, user_files
from xlagraph.ir import Instruction, strip_layout
from xlagraph.source_paths import is_library_path

__all__ = ["RECOGNIZER", "skip_sites"]

# A random number drawn in Python (not on the device).
_DRAW = re.compile(r"\btorch\.rand\(|\brandom\.(?:random|uniform|randint|choice)\(|\b(?:np|numpy)\.random\.")
_SETTING = re.compile(r"layerdrop|layer_drop|drop_layer|stochastic_depth")
_NEAR = 4  # lines from a draw to the `if` it feeds
_MAX_LINES = 20_000
_INPUTS = (CauseKind.PARAMETER_REMOVED, CauseKind.PARAMETER_ADDED)
# Where the skipped work lands: a region, or the producers of the updated weights it no longer
# returns (a block skipped inside the user's own model: its forward and backward feed only those).
_WORK = (CauseKind.STRUCTURE, CauseKind.OUTPUT_REMOVED, CauseKind.OUTPUT_ADDED)
_SAMPLE = 4096  # unpaired instructions whose lines are read (a layer's ops: a few hundred)
# torch and torch_xla draw random numbers for their own reasons (fractional pooling, samplers):
# never where a model decides to skip a layer.
# (Portable paths: an installed package's file starts with the package's name, `torch/...`.)
_FRAMEWORK = re.compile(r"(?:^|/site-packages/)(?:torch|torch_xla|torchvision|numpy)/")
_MIN_WORK = 20  # fewer unpaired ops than this is a value or a tap, not a layer's forward and backward

HINT = fix("conditional_work.random_skip")
# What the missing layer changes elsewhere: its weights and optimizer state are not read or
# written, the optimizer's grouped updates change size, the other inputs and outputs shift.
_CASCADE = (*INTERFACE, CauseKind.PARAMETER_PERMUTATION, CauseKind.OUTPUT_PERMUTATION)


def _unpaired(evidence: Evidence, cause: Cause) -> tuple[list[str], list[str]]:
    paired_right, paired_left = evidence.entry_match, evidence.entry_match_left
    return (
        [n for n in cause.left if n not in paired_left],
        [n for n in cause.right if n not in paired_right],
    )


def skip_sites(file: str, draw: re.Pattern[str] = _DRAW) -> tuple[int, ...]:
    """Lines of `file` where a number drawn in Python decides whether code runs: the `if` at or
    just after a host draw (`p = torch.rand([])` / `if p < self.layerdrop:`)."""
    return _skip_sites(file, draw, sources_key())


@lru_cache(maxsize=256)  # (per source text, as `_early_exits.exit_sites`)
def _skip_sites(file: str, draw: re.Pattern[str], _sources: tuple[object, ...]) -> tuple[int, ...]:
    sites: list[int] = []
    for n, text in source_lines(file, _MAX_LINES):
        code = text.split("#", 1)[0]
        if not draw.search(code) or "def " in text:
            continue
        # The `if` reads the draw: it draws itself, or tests a name the draw's line sets (a draw
        # that makes data, `mask = torch.rand(n) < p`, decides no `if` that follows it).
        drawn = {t.rpartition(".")[2].strip() for m in _ASSIGNED.findall(code) for t in m.split(",")}
        for k in range(n, n + _NEAR):
            test = source_line(file, k).split("#", 1)[0].strip()
            if test.startswith(("if ", "elif ")):
                if (k == n or drawn & set(_NAME.findall(test))) and k not in sites:
                    sites.append(k)
                break
    return tuple(sites)


# The names a line assigns (`p = ...`, `a, b = ...`, `self.p: float = ...`) and the names a test reads.
_ASSIGNED = re.compile(r"^\s*([\w.]+(?:\s*,\s*[\w.]+)*)\s*(?::[^=]+)?=(?!=)")
_NAME = re.compile(r"\b\w+\b")


def _decided_at(evidence: Evidence, cause: Cause, names: list[str]) -> str:
    """The `if` that skips the work: in a file the work's own lines come from (the model's module
    file, where the layer class and the loop that skips it live), the first such `if` after the
    layer's lines (an encoder's loop follows its layer class), or ""."""
    canon = evidence.left if names[0] in cause.left else evidence.right
    by_name = {n: ins for c in canon.computations.values() for n, ins in c.computation.by_name.items()}
    last: dict[str, int] = {}
    for name in names[:_SAMPLE]:
        ins = by_name.get(name)
        for frame in canon.module.frames_of(ins)[:1] if ins is not None else ():
            if not _FRAMEWORK.search(frame.file.replace("\\", "/")):
                last[frame.file] = max(last.get(frame.file, 0), frame.line)
    # The user's own files first (a block of theirs), then a model library's (transformers).
    for file, line in sorted(last.items(), key=lambda item: is_library_path(item[0])):
        sites = skip_sites(file) or skip_sites(file, _SETTING)
        if sites:
            return f"{file}:{next((k for k in sites if k > line), sites[-1])}"
    return ""


def _per_line(canon: CanonicalModule, file: str, first: int, last: int) -> Counter[int]:
    """How many of the entry's instructions each line of `file` from `first` to `last` made (by
    the innermost user frame: a `self.cell(z)` in the loop, whatever library code it calls)."""
    module, counts = canon.module, Counter[int]()
    for ins in canon.entry.computation.instructions:
        frame = next(iter(user_frames(module.frames_of(ins))), None)
        if frame is not None and first <= frame.line <= last and location(frame).rpartition(":")[0] == file:
            counts[frame.line] += 1
    return counts


def _iterated(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    """A loop that runs more times in one graph than in the other: an early exit in it
    (`if rel.item() < tol: break`, a fixed-point or refinement loop) decides on the host how
    many iterations a step traces. The block repeated is the same code, so the two graphs differ
    by a few ops the matching pairs as changed rather than by a region of unpaired work; what
    shows it is that every line of the loop made as many ops or more in one graph, and some more.
    The graph of each iteration's condition (cut at its read) differs the same way."""
    # The extra iterations' work, or their inputs (the micro-batches a `while` on the device's
    # count reads, each copy of the body with data of its own); a region whose ops carry library
    # lines only (a layer's forward and backward) goes with the loop that some user line places.
    lines = {i: _source_lines(c) for i, c in enumerate(pending) if c.kind in (CauseKind.STRUCTURE, *_INPUTS)}
    if not any(lines.values()):
        return NOTHING
    syncs = step_syncs(evidence)
    for file in user_files(evidence):
        for site in exit_sites(file, synced_lines(evidence, file)):
            if not site.loop or not leaves_work(file, site, syncs, reads=True):
                continue
            a = _per_line(evidence.left, file, site.first, site.last)
            b = _per_line(evidence.right, file, site.first, site.last)
            more = bool(b - a) and not a - b
            if not (more or (a - b and not b - a)):
                continue
            # Lines outside the loop belong to it when code the loop calls made them (a block's
            # own module, `self.chunk(x)`, defined elsewhere in the file): they made more ops in
            # the graph that iterates more, as the loop's own lines did.
            wide_a = _per_line(evidence.left, file, 1, _MAX_LINES)
            wide_b = _per_line(evidence.right, file, 1, _MAX_LINES)
            called = set(wide_b - wide_a if more else wide_a - wide_b)
            side = evidence.right if more else evidence.left
            # A line before the loop that made as many ops in both graphs (`q = q / q.sum()` ahead
            # of a Sinkhorn loop of the same divides and sums) is cited only because the extra
            # iteration's ops shifted the pairing onto its own: so when every op of the cause
            # made there is of a kind the loop makes too.
            steady = {n for n in wide_a.keys() & wide_b.keys() if wide_a[n] == wide_b[n]}
            kinds = _kinds(evidence.left, file, site.first, site.last) | _kinds(
                evidence.right, file, site.first, site.last
            )
            # Both graphs the rest of a step cut at this loop's read (after its last iteration):
            # lines after the loop that made as many ops in both graphs only read the iterations'
            # result, and the work that differs is the backward of one iteration more or less.
            ctx = evidence.context
            cut = ctx.cut_before == ctx.baseline_cut_before == f"{file}:{site.line}"
            same = {n for n in wide_a.keys() | wide_b.keys() if n > site.last and wide_a[n] == wide_b[n]}
            after = same if cut else set()
            inside = [
                i
                for i, found in lines.items()
                if _in_loop(found, file, site, called)
                or (
                    _in_loop(found, file, site, called | steady)
                    and _made_at(evidence, pending[i], file, steady) <= kinds
                )
                or (bool(after) and bool(found) and all(f == file and n in after for f, n in found))
            ]
            if not any(lines[i] for i in inside):
                continue
            inside.sort(key=lambda i: pending[i].kind is not CauseKind.STRUCTURE)  # the work leads
            # An op of the repeated block paired with another of its kind (a transpose of the
            # tied weight with the head's: the extra iteration shifts the pairing) is that block.
            ops = {
                _op(ins) for i in inside for canon, ins in evidence.instructions(pending[i]) if canon is side
            }
            # So is an op parameter of the loop that changed (the iteration's index in a slice).
            inside += [
                j
                for j, c in enumerate(pending)
                if c.kind is CauseKind.ATTRIBUTE
                and (
                    _in_loop(_source_lines(c), file, site, called)
                    or (
                        (mine := [_op(ins) for canon, ins in evidence.instructions(c) if canon is side])
                        and set(mine) <= ops
                    )
                )
            ]
            loc = f"{file}:{site.line}"
            text = source_text(loc).split("#", 1)[0].strip()
            summary = (
                f"the loop at {file}:{site.first} runs {'more' if more else 'fewer'} times in this graph: "
                f"`{text[:80]}` at {loc} stops it when a value read from the device says so (an implicit "
                "sync), so each number of iterations is a graph of its own (the step's forward and "
                "backward, and the condition's own graph at each iteration)"
            )
            return _explain(evidence, pending, inside[0], (loc,), summary, _LOOP_HINT, also=inside)
    return NOTHING


def _kinds(canon: CanonicalModule, file: str, first: int, last: int) -> set[tuple[str, str]]:
    """The kinds of op (opcode, shape) that lines `first` to `last` of `file` made in the entry."""
    return {
        _op(ins) for ins in canon.entry.computation.instructions if first <= _line(canon, ins, file) <= last
    }


def _made_at(evidence: Evidence, cause: Cause, file: str, lines: set[int]) -> set[tuple[str, str]]:
    """The kinds of the cause's ops (either graph's) that the `lines` of `file` made."""
    return {_op(ins) for canon, ins in evidence.instructions(cause) if _line(canon, ins, file) in lines}


def _line(canon: CanonicalModule, ins: Instruction, file: str) -> int:
    """The line of `file` that made `ins` (its innermost user frame), or 0."""
    frame = next(iter(user_frames(canon.module.frames_of(ins))), None)
    return frame.line if frame is not None and location(frame).rpartition(":")[0] == file else 0


def _source_lines(cause: Cause) -> list[tuple[str, int]]:
    return [split_location(s) for s in cause.sources if is_user_location(s)]


def _in_loop(lines: list[tuple[str, int]], file: str, site: Exit, called: set[int]) -> bool:
    """Every user line (of a cause) lies in the loop, or is a line of `file` in `called`, with one
    at least in the loop (or none at all)."""
    here = [f == file and site.first <= n <= site.last for f, n in lines]
    others = all(h or (f == file and n in called) for h, (f, n) in zip(here, lines, strict=True))
    return others and (any(here) or not lines)


def _op(ins: Instruction) -> tuple[str, str]:
    return ins.opcode, strip_layout(ins.shape)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    for i, cause in enumerate(pending):
        if cause.kind not in _WORK:
            continue
        only_left, only_right = _unpaired(evidence, cause)
        big, small = sorted((only_left, only_right), key=len, reverse=True)
        if len(big) < _MIN_WORK or len(big) < 3 * max(1, len(small)):
            continue
        if not any(c.kind in _INPUTS for c in pending):
            continue  # a skipped layer's weights are not read: its inputs are gone too
        site = _decided_at(evidence, cause, big)
        if site:
            text = source_text(site).split("#", 1)[0].strip()
            summary = (
                f"{_WHERE}: `{text[:80]}` at {site} skips it when a random number drawn in Python says "
                "so (LayerDrop / stochastic depth), so the graph depends on the draw"
            )
            return _explain(evidence, pending, i, (_setting(evidence), site), summary, HINT)
        exited = exited_at(evidence)
        if exited:
            site, *reads = exited
            text = source_text(site).split("#", 1)[0].strip()
            read = f" at {', '.join(reads)}" if reads else ""
            summary = (
                f"{_WHERE}: `{text[:80]}` at {site} leaves early when a value read from the device{read} "
                "says so (an implicit sync), so each exit point is a graph of its own; the layers it "
                "skipped, their weights and updates follow from it"
            )
            return _explain(evidence, pending, i, exited, summary, _EXIT_HINT)
    return _iterated(evidence, pending)


_WHERE = "one graph runs a part of the model that the other skips"
# A condition decided on the host, as `conditional_work`'s host branch: compute on every step and
# choose on the device.
_EXIT_HINT = fix("conditional_work.host_branch")
_LOOP_HINT = fix("conditional_work.host_iterations")


def _explain(
    evidence: Evidence,
    pending: tuple[Cause, ...],
    i: int,
    lead: tuple[str, ...],
    summary: str,
    hint: str,
    also: list[int] | None = None,
) -> Recognized:
    shapes = {strip_layout(ins.shape) for _, ins in evidence.instructions(pending[i])}
    joins = _joins(evidence, pending, i)
    picked = [i] + [
        j
        for j, c in enumerate(pending)
        if j != i
        and (
            j in (also or ())
            or c.kind in _CASCADE
            # The optimizer's grouped (foreach) updates of the weights that remain change size.
            or (c.kind in (CauseKind.STRUCTURE, CauseKind.ATTRIBUTE) and _optimizer_only(c))
            or (
                c.kind is CauseKind.STRUCTURE
                and {strip_layout(ins.shape) for _, ins in evidence.instructions(c)} <= shapes
            )
            or j in joins
        )
    ]
    cause = merge(CauseKind.CONDITIONAL_WORK, summary, [pending[j] for j in picked], hint=hint)
    cause = replace(cause, sources=tuple(dict.fromkeys([*(s for s in lead if s), *cause.sources]))[:6])
    return Recognized((cause,), frozenset(picked))


def _joins(evidence: Evidence, pending: tuple[Cause, ...], i: int) -> set[int]:
    """Regions where the skipped work meets the kept computation (a skipped head's forward read
    from the shared trunk, its gradient added into the trunk's): ops found in the work's graph
    only, with nothing new on the other side, each linked to the work's ops by operands through
    such ops. They exist only because that work runs, so they go with it."""
    only_left, only_right = _unpaired(evidence, pending[i])
    left_side = len(only_left) >= len(only_right)
    work, side = (only_left, evidence.left) if left_side else (only_right, evidence.right)
    operands = side.entry.operands
    out = set()
    for j, c in enumerate(pending):
        if j == i or c.kind is not CauseKind.STRUCTURE:
            continue
        left, right = _unpaired(evidence, c)
        mine, other = (left, right) if side is evidence.left else (right, left)
        if mine and not other and _linked(operands, set(work), set(mine)):
            out.add(j)
    return out


def _linked(operands: Mapping[str, tuple[str, ...]], work: set[str], region: set[str]) -> bool:
    """Every op of `region` is joined to `work` by operand edges (either way) through `region`."""
    near: dict[str, set[str]] = {n: set() for n in region}
    for n in region:
        for o in operands.get(n, ()):
            if o in region:
                near[n].add(o)
                near[o].add(n)
    # The region's ops that read the work's, or that the work's read.
    stack = [n for n in region if set(operands.get(n, ())) & work]
    stack += [o for w in work for o in operands.get(w, ()) if o in region]
    reached = set(stack)
    while stack:
        for m in near[stack.pop()] - reached:
            reached.add(m)
            stack.append(m)
    return reached == region


def _setting(evidence: Evidence) -> str:
    """The user's own line that sets the probability (`encoder_layerdrop=0.3` in a config)."""
    return next(iter(lines_matching(user_files(evidence), _SETTING, limit=1)), "")


def _optimizer_only(cause: Cause) -> bool:
    return bool(cause.sources) and all(is_optimizer_code(s) for s in cause.sources)


RECOGNIZER = Recognizer("random_skip", _recognize)
