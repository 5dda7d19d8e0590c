"""`diff`: the whole pipeline for two modules, parse -> canonical -> match -> diagnose.

Computations are paired from the entries down: two computations called at the same place by a
pair of matched instructions are compared in turn, unless their canonical hashes are equal. The
raw differences of every pair then go through the recognizers (`xlagraph.diagnose`), which name
the patterns behind them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

from xlagraph._callable import make_callable
from xlagraph._gc import paused_gc
from xlagraph._kept import kept_while_alive
from xlagraph.canonical import CanonicalModule, canonicalize
from xlagraph.diagnose import (
    HINTS,
    Cause,
    CauseKind,
    Context,
    Evidence,
    compare_computation,
    dead_code,
    input_dim_changes,
    recognize,
)
from xlagraph.diagnose.changed import Decided
from xlagraph.diagnose.collectives import is_collective
from xlagraph.diagnose.evidence import NO_CONTEXT
from xlagraph.diagnose.listing import fmt_list
from xlagraph.diagnose.recognizers.special_scalar import TENSOR_HINT
from xlagraph.diagnose.residue import (
    ELIDED,
    constants_of,
    elided_constants,
    is_elided,
    residual_differences,
    unseen_constants,
)
from xlagraph.diagnose.sources import sources_of
from xlagraph.ir import Computation, Module, has_source_lines, strip_layout
from xlagraph.ir import callers as calling
from xlagraph.match import Matching, match
from xlagraph.parse.lazy_ir import LOSSY_NOTE
from xlagraph.parse.sources import load_module

__all__ = ["ComputationPair", "DiffResult", "canonical_of", "diff_files", "diff_modules"]


@dataclass(frozen=True, eq=False)
class ComputationPair:
    """Two computations compared; `matching` is None when they are canonically identical, else
    `decided` is what the diagnosis decided of them (its pairs, what changed): what the views show."""

    left: str
    right: str
    matching: Matching | None
    decided: Decided | None = None


@dataclass(frozen=True, eq=False)
class DiffResult:
    """`causes` are why the graphs differ (empty when they are identical, or `undetermined`: the
    same as printed but for constant values a dump elided); `notes` are remarks that change
    nothing (dead code on both sides)."""

    left: CanonicalModule
    right: CanonicalModule
    causes: tuple[Cause, ...]
    pairs: tuple[ComputationPair, ...]
    notes: tuple[str, ...] = ()

    # Constants whose values one dump or both print as `{...}`: the text cannot tell whether two
    # graphs that print the same differ there, so they are not called identical.
    unseen: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        if self.causes:
            return "different"
        return "undetermined" if self.unseen else "identical"

    @property
    def differences(self) -> tuple[Cause, ...]:
        return self.causes


def diff_modules(a: Module, b: Module, context: Context = NO_CONTEXT) -> DiffResult:
    """Compare two modules and name the causes of their differences.

    `context` is what a capture knows about the two graphs (the sync's trigger and line, the
    steps): the recognizers use it when it is there.

    >>> from xlagraph.parse.hlo import parse_hlo
    >>> a = parse_hlo("HloModule m\\nENTRY e {\\n  p = f32[4] parameter(0)\\n"
    ...               "  c = f32[] constant(1)\\n  b = f32[4] broadcast(c), dimensions={}\\n"
    ...               "  ROOT r = f32[4] multiply(p, b)\\n}\\n")
    >>> b = parse_hlo("HloModule m\\nENTRY e {\\n  c.9 = f32[] constant(0)\\n"
    ...               "  x = f32[4] parameter(0)\\n  b.2 = f32[4] broadcast(c.9), dimensions={}\\n"
    ...               "  ROOT r = f32[4] multiply(b.2, x)\\n}\\n")
    >>> result = diff_modules(a, b)
    >>> result.verdict, [str(c.kind) for c in result.causes]
    ('different', ['constant_value'])
    """
    with paused_gc():
        return _diff(a, b, context)


def canonical_of(module: Module) -> CanonicalModule:
    """`canonicalize(module)`, made once while the module lives: a report compares each graph
    with several earlier ones (canonical forms are never modified). Kept on the module itself, not
    in a WeakKeyDictionary: the canonical form refers back to its module, so such a dictionary
    would keep every module ever read alive (a notebook's, `watch`'s, the fuzz harness's worker
    grew past 1 GB); module and form are a cycle the collector frees."""
    canon = module.__dict__.get(_CANONICAL)
    if canon is None:
        canon = module.__dict__[_CANONICAL] = canonicalize(module)
    return canon


_CANONICAL = "_canonical_form"  # a frozen dataclass's instance dict: written past its frozen setattr


def _diff(a: Module, b: Module, context: Context) -> DiffResult:
    left, right = canonical_of(a), canonical_of(b)
    # Calls are compared inlined, as XLA compiles them (rust/src/canon/inline.rs), unless a side
    # keeps a call XLA's inliner leaves (host compute, a shard map's body): that call is then
    # paired with its counterpart as written (`compute_on` host vs device is an attribute).
    if (a.inlined is not None or b.inlined is not None) and (_keeps_call(a) or _keeps_call(b)):
        left, right = _as_written(a), _as_written(b)
    raw: list[Cause] = []
    pairs: list[ComputationPair] = []
    seen: set[tuple[str, str]] = set()
    dims: set[tuple[str, str]] = set()
    regrouped = False
    noops: list[tuple[Cause, str]] = []  # identity converts only: a cause where nothing else differs
    entry = a.entry.name
    # First in, first out: a graph calls a few thousand small computations (reducers), most
    # canonically the same, each a step of this loop.
    work = deque([(entry, b.entry.name)])
    while work:
        ln, rn = key = work.popleft()
        if key in seen:
            continue
        seen.add(key)
        lc, rc = left.computations[ln], right.computations[rn]
        if lc.hash == rc.hash and ln != entry:
            pairs.append(ComputationPair(ln, rn, None))
            continue
        m = match(lc, rc)
        is_entry = ln == entry
        found, decided = compare_computation(left, right, lc, rc, m, is_entry, dims, regrouped, noops)
        raw += found
        pairs.append(ComputationPair(ln, rn, m, decided))
        if is_entry:
            dims = input_dim_changes(raw)
            regrouped = any(c.kind is CauseKind.COLLECTIVE for c in raw)
        # Most instructions call nothing: only the callers among the matched are looked up, in
        # the matching's order (the order their computations are compared in). The core picks
        # them out of its pairs (86K pairs, 2,200 callers: a filter here cost ~10 ms a diff);
        # a matching of dictionaries (names that repeat) is filtered here.
        called_l, called_r = _called(lc.computation), _called(rc.computation)
        queued: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()  # most callers call one `add`
        among = getattr(m.left, "keys_among", None)
        for x in among(called_l) if among is not None else filter(called_l.__contains__, m.left):
            cx = called_l[x]
            if regrouped and is_collective(lc.computation.by_name[x].opcode):
                continue  # a reducer (add vs maximum) is part of the collective's own change
            cy = called_r.get(m.left[x], ())
            if len(cx) == len(cy) and (cx, cy) not in queued:
                queued.add((cx, cy))  # queued again, the pairs would be skipped as `seen`
                work += [(p, q) for p, q in zip(cx, cy, strict=True) if (p, q) not in seen]
    idle = [note for _, note in noops] if raw else []
    if not raw:
        raw += [c for c, _ in noops]
    dead, notes = dead_code(left, right, explained=bool(raw))
    notes = idle + notes
    raw += dead
    compared = [(p.left, p.right, p.matching) for p in pairs]
    # What the text shows but no comparison named (operands in another order) comes before a
    # hash difference the text does not show at all.
    residue = () if raw else residual_differences(left, right, compared)
    if not residue:
        raw += _invisible_change(left, right, raw)  # differing dead code is visible: not this
    first = pairs[0].matching if pairs else None
    entry_match, entry_left = (first.right, first.left) if first is not None else ({}, None)
    phase = first.matcher if first is not None else {}
    evidence = Evidence(left, right, context, entry_match, entry_left, phase)
    causes = recognize(evidence, tuple(raw)) if raw else ()
    if not causes:
        causes = residue or residual_differences(left, right, compared)
    notes += elided_constants(left, right, compared)
    # The reader's notes (`file:line: note: ...`): old or other-version spellings it read.
    notes += dict.fromkeys(n.replace(": note: ", ": ", 1) for n in (*a.notes, *b.notes))
    if causes and not (_has_frames(a) or _has_frames(b)):
        notes.append(NO_FRAMES_NOTE)
    unseen = () if causes else unseen_constants(left, right, compared)
    if unseen and "lazy-ir" in (a.format, b.format) and LOSSY_NOTE not in notes:
        notes.append(LOSSY_NOTE)
    return DiffResult(left, right, causes, tuple(pairs), tuple(notes), unseen)


NO_FRAMES_NOTE = (
    "these dumps record no Python lines: for torch_xla, set XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1 before it starts "
    "(or run under XLAGRAPH_CAPTURE, which sets them) to see the line of your code behind each cause"
)


@kept_while_alive
def _has_frames(module: Module) -> bool:
    """Any instruction of the entry carries a source line (metadata or a stack frame). Kept per
    module: a report's graphs are each in several diffs."""
    return has_source_lines(module.entry)


@kept_while_alive
def _keeps_call(module: Module) -> bool:
    """The program XLA compiles (`Module.inlined`, or the module) still has a `call`. Kept per
    module, as `_has_frames`."""
    program = module.inlined or module
    return any(c.by_name[n].opcode == "call" for c in program.computations for n in calling(c))


def _as_written(module: Module) -> CanonicalModule:
    """The canonical form of the module as its text has it, calls not inlined (made once)."""
    if module.inlined is None:
        return canonical_of(module)
    canon = module.__dict__.get(_WRITTEN)
    if canon is None:
        canon = module.__dict__[_WRITTEN] = canonicalize(replace(module, inlined=None, core=None))
    return canon


_WRITTEN = "_written_canonical_form"


@kept_while_alive
def _called(comp: Computation) -> dict[str, tuple[str, ...]]:
    """The computations each instruction of `comp` that calls any calls, by its name. Kept per
    computation: a report's graphs are each in several diffs, and each look-up of an instruction
    the reader did not build builds it (2,200 callers a graph of the 20-variant report: 12 ms a
    diff)."""
    by_name = comp.by_name
    return {name: tuple(by_name[name].called) for name in calling(comp)}


def _invisible_change(left: CanonicalModule, right: CanonicalModule, causes: list[Cause]) -> list[Cause]:
    """Graph hashes differ but the text shows nothing: the lazy IR text omits constants and
    op parameters, and HLO text prints large literals as `{...}`. Constants whose values the
    text leaves out are where a changed value hides (`torch.arange(shift, ...)` with a Python
    `shift`): they are named, with their lines; otherwise say which outputs differ."""
    a, b = left.module, right.module
    if causes:
        return []
    ha, hb = a.info.graph_hash, b.info.graph_hash
    if not (ha and hb and ha != hb):
        return []
    hashes = f"graph hashes differ ({ha} vs {hb}) but the text shows the same graph"
    hidden = _unprinted_constants(right)
    if hidden:
        user, library = sources_of([(right, right.entry, tuple(hidden))], [])
        shapes = fmt_list(sorted({strip_layout(right.entry.instruction(n).shape) for n in hidden}), 3)
        return [
            Cause(
                CauseKind.CONSTANT_VALUE,
                f"{hashes}: the difference is in the values of {len(hidden)} constant(s) the dump "
                f"prints as {ELIDED} ({shapes})",
                TENSOR_HINT,
                (),
                tuple(hidden),
                sources=user or library,
                library=library,
            )
        ]
    ra, rb = a.info.root_hashes, b.info.root_hashes
    outputs = [i for i, (x, y) in enumerate(zip(ra, rb, strict=False)) if x != y]
    where = f"outputs {', '.join(map(str, outputs))} differ" if outputs else "the graphs differ"
    lossy = "lazy-ir" in (a.format, b.format)
    detail = LOSSY_NOTE if lossy else "the difference is in what the text does not print"
    return [
        Cause(
            CauseKind.ATTRIBUTE,
            f"{hashes}: {where} by a constant value or op parameter; {detail}",
            HINTS[CauseKind.ATTRIBUTE],
        )
    ]


def _unprinted_constants(canon: CanonicalModule) -> list[str]:
    """Live constants of the entry printed as `{...}`, those with a user's line first."""
    entry = canon.entry
    found = [n for n in constants_of(entry) if is_elided(entry.instruction(n).payload)]
    return sorted(
        found, key=lambda n: not (entry.instruction(n).metadata and entry.instruction(n).metadata.source_file)
    )


def diff_files(spec_a: str, spec_b: str) -> DiffResult:
    """`diff_modules` on two `PATH` / `PATH#K` specs."""
    return diff_modules(load_module(spec_a), load_module(spec_b))


make_callable(__name__)  # `xlagraph.diff(a, b)` calls xlagraph.api.diff (xlagraph/_callable.py)
