"""`build_report`: a `RunLog` in, a `RunReport` out.

Every compile after the first is explained against a baseline: the most similar earlier graph
from the same call site. Candidates are the earlier graphs whose first sync had the same user
frames (else the same innermost user line, else any earlier graph), at most `MAX_CANDIDATES`
of the most recent; each is compared with `diff_modules` and the closest wins: the fewest live
instructions involved in its causes, then the fewest causes, then the most recent. Its causes are
then attributed: extra or missing outputs to live tensors of the same shape, shape changes to the
inputs, permutations to what moved, collective changes to the buckets, each with the user's own
source lines before library lines.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path, PurePath

from xlagraph.capture.shardings import MarkSharding, find_marks, read_mark_shardings
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.collectives import collectives
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import (
    SourceText,
    call_site,
    current_sources,
    is_library,
    location,
    reading_sources,
    source_line,
    split_frames,
    user_frames,
)
from xlagraph.diff import DiffResult
from xlagraph.graphs import variant_letter
from xlagraph.ir import Frame, strip_layout
from xlagraph.parse.shared import current as current_shared
from xlagraph.progress import counted, shown, step
from xlagraph.report.baseline import (
    GENERIC_NAMES,
    MAX_CANDIDATES,
    NEW_CALL_SITE,
    NEW_SYNC_POINT,
    Modules,
    choose_baseline,
    graph_name,
    graphs_read,
)
from xlagraph.report.findings import step_breaks
from xlagraph.report.holders import storing_lines
from xlagraph.report.model import (
    Attribution,
    Baseline,
    RankEntry,
    Recompile,
    RunReport,
    TensorRef,
    TimelineEntry,
    Variant,
)
from xlagraph.report.savefile import is_step_marker
from xlagraph.report.source_text import source_text_near
from xlagraph.runlog import GraphRecord, LiveTensor, RunLog, Sync
from xlagraph.source_paths import short_location

__all__ = ["MAX_CANDIDATES", "build_report", "trigger_of"]

_MAX_TENSORS = 4
_EXTRA_CANDIDATES = 2
_MAX_ITEMS = 8
_MAX_CALLERS = 3

LineReader = Callable[[str, int], str]


def _read_line(file: str, line: int) -> str:
    return source_line(file, line)


# -- triggers ------------------------------------------------------------------------------
_IMPLICIT = (
    (".item()", ".item()"),
    (".cpu()", ".cpu()"),
    (".tolist()", ".tolist()"),
    (".numpy()", ".numpy()"),
)


def trigger_of(sync: Sync, read_line: LineReader = _read_line) -> str:
    """A short label for what made the sync happen (see `TimelineEntry.trigger`).

    torch_xla's own wording (`Sync.cause`) is used when the source has it, else the frames: a
    torch_xla `sync`/`mark_step` frame is an explicit step marker; without one the sync was
    implicit, and the user's line says which (`.item()`, `print`, ...) when it can be read.
    """
    cause = sync.cause.lower()
    frames = sync.frames
    # torch_xla names a compiled program's own run "user code trying to access tensor value": its
    # frames (the bridge's optimized_mod) say it is torch.compile's graph, not a read of the user's
    if "dynamo" in cause or any("torch_xla/_dynamo/" in f.file for f in frames):
        return "dynamo"
    if "torch_xla.compile" in cause or any(
        f.function in ("compile", "_compile") and "torch_xla" in f.file for f in frames
    ):
        return "torch_xla.compile"
    if "mark_step" in cause or any(f.function == "mark_step" and "torch_xla" in f.file for f in frames):
        return "mark_step"
    if ("sync" in cause and "before torch_xla.sync" not in cause) or is_step_marker(frames):
        return "sync"
    if not frames and not cause:
        return "unknown"
    users = user_frames(frames)
    text = read_line(users[0].file, users[0].line) if users else ""
    for pattern, label in _IMPLICIT:
        if pattern in text:
            return label
    if "print(" in text:
        return "print"
    return "implicit"


# -- lines ---------------------------------------------------------------------------------
def _is_user_file(file: str, user_names: frozenset[str]) -> bool:
    """Full paths are judged by where they are; bare names (lazy IR `location=f@file.py:3`) by
    whether a user frame of the run has that file name."""
    if "/" in file or "\\" in file:
        return not is_library(Frame("", file, 0))
    return PurePath(file).name in user_names and not file.startswith("<")


def _split_lines(lines: Iterable[str], user_names: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    user: list[str] = []
    library: list[str] = []
    for loc in lines:
        file = loc.rsplit(":", 1)[0] if loc.rsplit(":", 1)[-1].isdigit() else loc
        bucket = user if _is_user_file(file, user_names) else library
        if loc not in bucket:
            bucket.append(loc)
    return tuple(user), tuple(library)


# -- attribution ---------------------------------------------------------------------------
def _norm_shape(shape: str) -> str:
    return strip_layout(shape).replace(" ", "")


def _tensor_ref(t: LiveTensor, cited: tuple[str, ...]) -> TensorRef:
    users, library = split_frames(t.frames)
    line = location(users[0]) if users else ""
    match = "shape and line" if line and line in cited else "shape"
    held_by, stored = _holder(t, users, line)
    return TensorRef(t.id, _norm_shape(t.shape), line, match, users, len(library), held_by, stored)


def _holder(t: LiveTensor, users: tuple[Frame, ...], line: str) -> tuple[str, tuple[str, ...]]:
    """What kept `t` alive and the lines that store it there: the first of its holders whose
    storing lines are not just the line that made it (`loss = ...` holds `loss` too)."""
    for h in t.holders:
        stored = tuple(s for s in storing_lines(h, users) if s != line)
        if stored:
            return str(h), stored
    return (str(t.holders[0]), ()) if t.holders else ("", ())


def _pick_tensors(
    tensors: tuple[LiveTensor, ...],
    shapes: list[str],
    cited: tuple[str, ...],
    other: tuple[LiveTensor, ...] = (),
) -> tuple[TensorRef, ...]:
    """Live tensors of the given shapes. Those created on a line the cause cites are the answer
    when there are enough of them; otherwise a few candidates of the right shape, those created
    by user code and the most recent first. A tensor that was an output of the `other` graph
    too (pending at its sync: a weight both update) comes last: an output one graph adds is a
    tensor the other did not compute."""
    wanted = set(shapes)
    # (by id, and by the path that holds it: an updated weight is a new tensor at each step)
    both = {t.id for t in other if t.pending} | {t.holders[0].path for t in other if t.pending and t.holders}
    picked = [t for t in tensors if _norm_shape(t.shape) in wanted]
    seen_before = {t.id for t in picked if t.id in both or (t.holders and t.holders[0].path in both)}
    refs = [_tensor_ref(t, cited) for t in picked]
    refs.sort(key=lambda r: (r.id in seen_before, r.match != "shape and line", not r.line, -r.id))
    fresh = [r for r in refs if r.id not in seen_before]
    if both and len(fresh) == len(shapes) and sorted(r.shape for r in fresh) == sorted(shapes):
        # exactly the tensors the other graph did not compute: these are they
        return tuple(r if r.match == "shape and line" else replace(r, match="by elimination") for r in fresh)
    on_line = [r for r in refs if r.match == "shape and line"]
    if len(on_line) >= len(shapes):
        return tuple(on_line[: max(len(shapes), _MAX_TENSORS)])
    return tuple(refs[: len(shapes) + _EXTRA_CANDIDATES])


def _output_positions(result: DiffResult, names: tuple[str, ...], right: bool) -> list[tuple[int, str]]:
    canon = result.right if right else result.left
    entry = canon.entry
    chosen = set(names)
    return [(j, _norm_shape(entry.instruction(n).shape)) for j, n in enumerate(entry.outputs) if n in chosen]


def _bounded(items: list[str]) -> tuple[str, ...]:
    if len(items) <= _MAX_ITEMS:
        return tuple(items)
    return (*items[:_MAX_ITEMS], f"... and {len(items) - _MAX_ITEMS} more")


@dataclass(frozen=True)
class _Context:
    result: DiffResult
    baseline: GraphRecord | None
    target: GraphRecord | None
    user_names: frozenset[str]
    site: str = ""
    read_line: LineReader = _read_line
    marks: tuple[MarkSharding, ...] = ()  # the capture's mark_sharding calls
    step: int = -1


OWN_GRAPH_HINT = fix("own_graph")


def _own_graph(site: str, users: tuple[Frame, ...], name: str = "", other: str = "", when: str = "") -> Cause:
    """The first graph of another call site (or of another `torch_xla.compile` function): work
    this run syncs somewhere else than the earlier graphs (an evaluation pass after each epoch),
    named with the user's lines that reach it (expected)."""
    lines = tuple(dict.fromkeys([site, *(location(f) for f in users)]))[:4]
    if name not in GENERIC_NAMES and name != other:
        what = f"the graph torch_xla.compile names {name}, another program than {other or 'the earlier ones'}"
        if other == f"{name}_clear_pending":
            what += " (the ops pending before the call, run first as a graph of their own)"
    else:
        what = f"a graph of its own for the work synced at {short_location(site)}"
    why = {
        "first step": "the code since the previous sync of the run's first step (or other code that "
        "starts the run), compiled once and replayed by later steps",
        "after the loop": "work read after the loop's last step (a final metric), compiled once",
    }.get(
        when,
        "code that runs at another point than the earlier graphs (an evaluation pass, metrics, a "
        "compiled function); compiled once, reused when it runs again",
    )
    return Cause(
        CauseKind.CONDITIONAL_WORK,
        f"{what}: {why}",
        OWN_GRAPH_HINT,
        info=True,
        sources=lines,
    )


def _attribute(index: int, cause: Cause, ctx: _Context) -> Attribution:
    """What one cause points at in the user's program."""
    result = ctx.result
    lines, library_lines = _split_lines(cause.sources, ctx.user_names)
    direct = bool(lines)  # the graph's own metadata cites the user's lines
    kind = cause.kind
    items: list[str] = []
    tensors: tuple[TensorRef, ...] = ()
    summary = cause.summary
    target_tensors = ctx.target.tensors if ctx.target else ()
    baseline_tensors = ctx.baseline.tensors if ctx.baseline else ()
    if kind is CauseKind.OUTPUT_ADDED:
        outputs = _output_positions(result, cause.right, right=True)
        items = [f"output {j}: {s}" for j, s in outputs]
        shapes = [s for _, s in outputs]
        tensors = _pick_tensors(target_tensors, shapes, lines, baseline_tensors)
        summary = f"{len(outputs)} extra output(s): the live tensor(s) kept alive only in this graph"
    elif kind is CauseKind.OUTPUT_REMOVED:
        outputs = _output_positions(result, cause.left, right=False)
        items = [f"baseline output {i}: {s}" for i, s in outputs]
        shapes = [s for _, s in outputs]
        tensors = _pick_tensors(baseline_tensors, shapes, lines, target_tensors)
        summary = f"{len(outputs)} output(s) of the baseline missing: tensor(s) alive then, not now"
    elif kind is CauseKind.PARAMETER_SHAPE:
        numbers = result.left.entry.param_number
        items = [f"input {numbers.get(c.left, '?')}: {c.old} -> {c.new}" for c in cause.changes]
        summary = f"{len(cause.changes)} input(s) changed shape"
    elif kind in (CauseKind.PARAMETER_PERMUTATION, CauseKind.OUTPUT_PERMUTATION):
        what = "input" if kind is CauseKind.PARAMETER_PERMUTATION else "output"
        moved = [m for m in cause.mapping if m.left != m.right]
        items = [f"baseline {what} {m.left} is now {what} {m.right} ({m.shape})" for m in moved]
        if kind is CauseKind.OUTPUT_PERMUTATION:
            shapes = [m.shape for m in moved]
            tensors = _pick_tensors(target_tensors, shapes, lines)
        summary = f"{len(moved)} {what}(s) moved: the tensors were created or updated in another order"
    elif kind is CauseKind.COLLECTIVE:
        left_names, right_names = set(cause.left), set(cause.right)
        before = [c for c in collectives(result.left) if c.name in left_names]
        after = [c for c in collectives(result.right) if c.name in right_names]
        items = [f"baseline {c.kind} {c.name} over {', '.join(c.operands) or '()'}" for c in before]
        items += [f"now {c.kind} {c.name} over {', '.join(c.operands) or '()'}" for c in after]
        summary = f"buckets: {len(before)} collective(s) of the baseline regrouped into {len(after)}"
    elif kind in (CauseKind.CONSTANT_VALUE, CauseKind.ATTRIBUTE):
        items = [
            f"{c.left}: {c.what} {c.old} -> {c.new}"
            if c.left
            else f"{c.what}: {c.old or '(none)'} -> {c.new}"
            for c in cause.changes
        ]
    else:  # the named patterns: what differs, as the changes say it
        items = [f"{c.what}: {c.old or '(none)'} -> {c.new or '(none)'}" for c in cause.changes]
    if kind is CauseKind.SHARDING and ctx.marks:
        # The HLO's metadata points into xla_sharding.py or the model; the capture saw the call.
        # A changed sharding, or an annotation only one graph has (`mark_sharding` on an
        # activation from some step on): its custom-call carries the spec the call made.
        specs = [ch.new for ch in cause.changes if ch.what == "sharding"] + [
            ins.attribute("sharding", "") or ""
            for ins in (result.right.entry.computation.by_name.get(n) for n in cause.right)
            if ins is not None
            and ins.opcode == "custom-call"
            and ins.attribute("custom_call_target") == '"Sharding"'
        ]
        marked = [
            m.line
            for spec in specs
            if spec
            for m in find_marks(ctx.marks, spec)
            if m.line and (ctx.step < 0 or m.step <= ctx.step)
        ]
        lines = tuple(dict.fromkeys((*marked[:2], *lines)))
    if not lines and library_lines and ctx.site:
        lines = _calling_lines(library_lines, ctx.site, ctx.read_line)
    if not lines:  # the ops come from library code: the user's line that made the tensor
        lines = tuple(dict.fromkeys(t.line for t in tensors if t.line))[:2]
    if kind in (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED) and (
        len(tensors) == len(items) or all(t.match == "shape and line" for t in tensors)
    ):  # the only candidates: where the program keeps them decides whether they are outputs,
        # first unless the graph cites the user's lines itself (a tensor made under the `if`)
        stored = tuple(s for t in tensors for s in t.stored_at)
        lines = tuple(dict.fromkeys((*lines, *stored) if direct else (*stored, *lines)))
    # A tensor made inside the user's own helper: its callers are the user's lines too (the call
    # inside `if step % k == 0:` is what makes it appear on some steps only).
    callers = [location(f) for t in tensors if t.match == "shape and line" for f in t.frames[1:_MAX_CALLERS]]
    lines = tuple(dict.fromkeys((*lines, *callers)))
    return Attribution(index, str(kind), summary, _bounded(items), tensors, lines, library_lines)


# Library code the user calls by a name of their own: which call in their script reached it.
_CALLS = (
    ("clip_grad", ("clip_grad_norm_(", "clip_grad_value_(", "clip_grad")),
    ("_patched_functions", ("clip_grad_norm_(",)),  # torch_xla's own clip_grad_norm_
    ("/optim/", (".step(",)),
    ("dropout", (".train(", ".eval(")),
)
_MAX_SCRIPT_LINES = 5000


def _file_line(location: str) -> tuple[str, int]:
    file, _, line = location.rpartition(":")
    return (file, int(line)) if line.isdigit() else (location, 0)


def _calling_lines(library_lines: tuple[str, ...], site: str, read_line: LineReader) -> tuple[str, ...]:
    """The lines of the user's script (the sync's file) that call the library code a cause's
    instructions come from: `clip_grad_norm_(...)` for clip_grad.py, `opt.step()` for an
    optimizer. Empty when the script has no such call."""
    file = site.rpartition(":")[0]
    # The library line's own text names the op where its file does not (`F.dropout` in functional.py).
    said = [lib + " " + read_line(*_file_line(lib)) for lib in library_lines]
    tokens = [t for marker, names in _CALLS if any(marker in text for text in said) for t in names]
    # A function of torch's functional API the user calls by name (`F.interpolate(...)`).
    tokens += [f"{name}(" for lib in library_lines if (name := _functional_name(lib, read_line))]
    if not file or not tokens:
        return ()
    found: list[str] = []
    in_string = False
    for n in range(1, _MAX_SCRIPT_LINES):
        text = read_line(file, n)
        if not text:
            break
        quotes = text.count('"""') + text.count("'''")
        if in_string or quotes:  # docstrings talk about calls; only code makes them
            in_string = in_string != (quotes % 2 == 1)
            continue
        code = text.split("#", 1)[0]
        if any(t in code for t in tokens):
            found.append(f"{file}:{n}")
    return tuple(found[:3])


_FUNCTIONAL = ("torch/nn/functional.py", "torch/functional.py")
_DEF_LINE = re.compile(r"^def ([a-z]\w*)\(")


def _functional_name(library_line: str, read_line: LineReader) -> str:
    """The public function of torch's functional API a library line is in (`interpolate`), or ""."""
    file, line = _file_line(library_line)
    if not file.replace("\\", "/").endswith(_FUNCTIONAL):
        return ""
    for n in range(line, max(0, line - 400), -1):
        m = _DEF_LINE.match(read_line(file, n))
        if m:
            return m.group(1)
    return ""


# -- baseline ------------------------------------------------------------------------------
def _steady_from(syncs: tuple[Sync, ...]) -> int | None:
    compiled = [s.step for s in syncs if s.compiled]
    if not syncs:
        return None
    start = (max(compiled) + 1) if compiled else syncs[0].step
    return start if any(s.step >= start for s in syncs) else None


_EXPLICIT = frozenset({"sync", "mark_step", "torch_xla.compile"})


def _side_steps(syncs: tuple[Sync, ...]) -> int:
    """Steps of the source that are no training step: every explicit sync in them is at another
    line than the loop's own step marker (an evaluation pass or a checkpoint synced in the loop,
    `xm.mark_step()` in `validate()`). The loop's marker is the line most explicit syncs come from;
    a first step is never one (nothing ran before it to be a step of)."""
    explicit = [(s, call_site(s.frames)) for s in syncs if trigger_of(s) in _EXPLICIT]
    sites = Counter(site for _, site in explicit)
    if len(sites) < 2:
        return 0
    main = sites.most_common(1)[0][0]
    marked: dict[int, bool] = {}  # step -> has an explicit sync at the loop's marker
    for s, site in explicit:
        marked[s.step] = marked.get(s.step, False) or site == main
    first = min(marked, default=0)
    return sum(1 for step, at_main in marked.items() if not at_main and step != first)


def _expected_kind(r: Recompile, kind: str) -> bool:
    """Every cause of `kind` in `r` is an expected change (a warm-up beside a real cause too)."""
    return any(str(c.kind) == kind for c in r.causes) and all(c.info for c in r.causes if str(c.kind) == kind)


def _rank(
    recompiles: tuple[Recompile, ...],
    keys: Callable[[Recompile], Iterable[str]],
    expected_as: Callable[[Recompile, str], bool] = lambda r, _: r.expected,
) -> tuple[RankEntry, ...]:
    table: dict[str, tuple[int, float, list[str], bool]] = {}
    for r in recompiles:
        for key in dict.fromkeys(keys(r)):
            n, sec, letters, expected = table.get(key, (0, 0.0, [], True))
            table[key] = (
                n + 1,
                sec + r.compile_seconds,
                [*letters, r.variant],
                expected and expected_as(r, key),
            )
    entries = [RankEntry(k, n, sec, tuple(v), e) for k, (n, sec, v, e) in table.items()]
    # What the user must fix first: a key whose every recompile is expected (warm-up) goes last.
    entries.sort(key=lambda e: (e.expected, -e.compiles, -e.seconds, e.key))
    return tuple(entries)


def build_report(log: RunLog, explain: bool = True, read_line: LineReader = _read_line) -> RunReport:
    """The report of one process: variants, timeline, warm-up, every recompile explained, ranking.

    With `explain=False` no graph is parsed or compared: recompiles carry no baseline and no
    causes (what `check` needs before it knows the run failed). `read_line(file, line)` reads a
    source line, to tell `.item()` from `print`; `source_line` unless a test passes another. Source
    text comes from the capture's stored sources (`source_text_of`), never from installed packages.
    """
    with reading_sources(source_text_of(log)):
        return _build_report(log, explain, read_line)


def source_text_of(log: RunLog) -> SourceText:
    """Where a run's source lines are read: a capture's stored sources; without them (a raw dump,
    a capture made before sources were stored) `source_text_near` the source."""
    if log.kind == "capture":
        from xlagraph.capture.stored_sources import StoredSources

        stored = StoredSources.load(log.source)
        if stored is not None:
            return SourceText(stored=stored)
    return source_text_near([log.source] if log.source else [])


def _build_report(log: RunLog, explain: bool, read_line: LineReader) -> RunReport:
    syncs = log.syncs
    letters: dict[str, str] = {}
    first: dict[str, Sync] = {}
    counts: dict[str, int] = {}
    compiled_hashes: dict[str, Sync] = {}
    recompiled_again: list[str] = []
    for s in syncs:
        if s.graph_hash not in letters:
            letters[s.graph_hash] = variant_letter(len(letters))
            first[s.graph_hash] = s
        counts[s.graph_hash] = counts.get(s.graph_hash, 0) + 1
        if s.compiled:
            if s.graph_hash in compiled_hashes:
                recompiled_again.append(
                    f"graph {letters[s.graph_hash]} compiled again at sync {s.index} (step {s.step}): "
                    "another device or thread of this process compiled it too, or the cache evicted it"
                )
            else:
                compiled_hashes[s.graph_hash] = s
    steady_from = _steady_from(syncs)
    triggers = {s.index: trigger_of(s, read_line) for s in syncs}
    timeline = tuple(
        TimelineEntry(
            s.index,
            s.step,
            letters[s.graph_hash],
            s.compiled,
            triggers[s.index],
            call_site(s.frames),
            "steady" if steady_from is not None and s.step >= steady_from else "warm-up",
            s.compile_seconds,
        )
        for s in syncs
    )
    variants = tuple(
        Variant(
            letters[h],
            h,
            first[h].index,
            first[h].step,
            counts[h],
            h in compiled_hashes,
            call_site(first[h].frames),
            log.graphs[h].module if h in log.graphs else "",
        )
        for h in letters
    )
    user_names = frozenset(_file_name(f.file) for s in syncs for f in user_frames(s.frames)) | frozenset(
        _file_name(f.file) for g in log.graphs.values() for t in g.tensors for f in user_frames(t.frames)
    )
    modules = Modules(log.graphs)
    marks = read_mark_shardings(log.source) if explain and Path(log.source).is_dir() else ()
    # The last explicit sync (a step marker): an implicit one after it reads a value after the loop.
    last_marker = max((s.index for s in syncs if triggers[s.index] not in IMPLICIT_TRIGGERS), default=-1)
    args = (
        letters,
        first,
        modules if explain else None,
        log,
        triggers,
        user_names,
        read_line,
        marks,
        last_marker,
        max((s.step for s in syncs), default=-1),
    )
    targets = list(compiled_hashes.values())[1:]
    # Several processes of one report share their baseline choices: each is explained alone.
    shared = current_shared()
    alone = shared is None or shared.processes == 1
    workers = min(report_workers(), len(targets)) if explain and alone else 1
    if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
        explained = _explain_in_processes(targets, args, workers)
    else:
        explained = tuple(_explain(s, *args) for s in counted("recompile", targets))
    recompiles = tuple(r for r in explained if not r.first_of_program)
    compiles = len(compiled_hashes)
    warnings = list(recompiled_again)
    if log.compiles_reported is not None and log.compiles_reported != compiles:
        warnings.append(
            f"torch_xla counted {log.compiles_reported} compile(s) (CompileTime) but the recorded syncs "
            f"show {compiles} distinct compiled graph(s)"
            + (
                ": ops that ran on the CPU compile graphs of their own (see the notes)"
                if any(n.startswith("aten ops ran on the CPU") for n in log.notes)
                else ""
            )
        )
    steady_variants = tuple(dict.fromkeys(e.variant for e in timeline if e.phase == "steady"))
    per_step: dict[int, list[str]] = {}
    for e in timeline:
        if e.phase == "steady":
            per_step.setdefault(e.step, []).append(e.variant)
    # several graphs, the same ones in the same order every step (a step cut by graph breaks or
    # syncs): not variants taking turns
    steady_each_step = len(steady_variants) > 1 and len({tuple(v) for v in per_step.values()}) == 1
    steps = len(log.steps) if log.steps else len({s.step for s in syncs})
    side_steps = _side_steps(syncs)
    dynamo = None
    if log.dynamo is not None:
        from xlagraph.report.dynamo import dynamo_section

        last = [t for t in timeline if t.step == timeline[-1].step] if timeline else []
        dynamo = dynamo_section(log.dynamo, variants, syncs, len(last) or None)
        made = {v: e.compile_id for e in dynamo.events for v in e.variants}
        recompiles = tuple(replace(r, dynamo=made.get(r.variant, "")) for r in recompiles)
        explained = [replace(r, dynamo=made.get(r.variant, "")) for r in explained]
    from xlagraph.report.eager import eager_section

    return RunReport(
        eager=eager_section(log),
        dynamo=dynamo,
        source=log.source,
        kind=log.kind,
        process=log.process,
        compiles=compiles,
        compiles_reported=log.compiles_reported,
        syncs=len(syncs),
        steps=steps - side_steps,
        side_steps=side_steps,
        variants=variants,
        timeline=timeline,
        steady_from_step=steady_from,
        steady_variants=steady_variants,
        steady_each_step=steady_each_step,
        recompiles=recompiles,
        by_call_site=_rank(recompiles, lambda r: [r.call_site or "(no frames)"]),
        by_cause=_rank(recompiles, lambda r: r.kinds or ["unexplained"], _expected_kind),
        compile_seconds=sum(s.compile_seconds for s in syncs if s.compiled),
        notes=log.notes,
        warnings=tuple(warnings),
        first_compiles=tuple(r for r in explained if r.first_of_program),
        findings=step_breaks(tuple(timeline)),
    )


def report_workers() -> int:
    """Processes that explain a report's recompiles: `XLAGRAPH_WORKERS`, else one per core this
    process may run on."""
    raw = os.environ.get("XLAGRAPH_WORKERS", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _earlier(target: Sync, first: dict[str, Sync]) -> list[tuple[str, Sync]]:
    """The graphs compiled before `target`, each with its first sync."""
    return [(h, s) for h, s in first.items() if s.index < target.index]


# What the forked workers explain: set in the parent just before the fork, read by the children.
_JOB: tuple[list[Sync], tuple[object, ...], SourceText | None] | None = None


def _explain_one(k: int) -> Recompile:
    assert _JOB is not None
    targets, args, text = _JOB
    with shown(None), reading_sources(text) if text is not None else nullcontext():
        return _explain(targets[k], *args)  # type: ignore[arg-type]


def _explain_in_processes(
    targets: list[Sync], args: tuple[object, ...], workers: int
) -> tuple[Recompile, ...]:
    """`_explain` of each target in forked processes: each recompile's diffs depend only on the
    run's graphs and facts, which the children inherit, so every answer is the one a single
    process gives (in target order). Neighbouring recompiles go to one worker (contiguous
    chunks): they compare the same earlier graphs, which it then parses once."""
    global _JOB
    _JOB = (targets, args, current_sources())
    chunk = -(-len(targets) // workers)
    # A chunk's first recompile would read its own graph and the earlier ones it compares with
    # before any work of its worker's could share them: read here, on two threads, they are the
    # workers' from the fork (and the first worker's when it gets there).
    first, modules = args[1], args[2]
    if isinstance(modules, Modules):
        heads = range(chunk, len(targets), chunk)
        modules.preload([h for k in heads for h in graphs_read(targets[k], _earlier(targets[k], first))])  # type: ignore[arg-type]
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            explained = []
            for k, r in enumerate(pool.map(_explain_one, range(len(targets)), chunksize=chunk), 1):
                step("recompile", k, len(targets))
                explained.append(r)
    finally:
        _JOB = None
    return tuple(explained)


@lru_cache(maxsize=16384)
def _file_name(file: str) -> str:
    return PurePath(file).name


def _in_first_step(target: Sync, first: dict[str, Sync], last_step: int | None = None) -> bool:
    """No step has ended before `target`'s (every earlier graph first ran in its step), and, when
    `last_step` is given, later steps follow to show what replays."""
    earlier = all(s.step == target.step for s in first.values() if s.index < target.index)
    return earlier and (last_step is None or last_step > target.step)


def _explain(
    target: Sync,
    letters: dict[str, str],
    first: dict[str, Sync],
    modules: Modules | None,
    log: RunLog,
    triggers: dict[int, str],
    user_names: frozenset[str],
    read_line: LineReader = _read_line,
    marks: tuple[MarkSharding, ...] = (),
    last_marker: int = -1,
    last_step: int = -1,
) -> Recompile:
    earlier = _earlier(target, first)
    first_sync = min((s.index for s in first.values()), default=0)
    if modules is None:
        choice, note = None, "not explained"
    else:
        choice, note = choose_baseline(target, earlier, modules, triggers, first_sync)
    users, library = split_frames(target.frames)
    site = call_site(target.frames)
    causes: tuple[Cause, ...] = ()
    attribution: tuple[Attribution, ...] = ()
    notes: tuple[str, ...] = ()
    first_of_program = False
    if choice is not None and choice.result is not None:
        result = choice.result
        causes = result.differences
        records = log.graphs.get(choice.graph_hash), log.graphs.get(target.graph_hash)
        ctx = _Context(result, *records, user_names, site, read_line, marks, target.step)
        attribution = tuple(_attribute(i, c, ctx) for i, c in enumerate(causes))
        notes = result.notes
        # A value read after the last step marker (final metrics after the loop) is a graph of
        # its own too, though its sync is implicit: no step follows for it to have cut.
        after_loop = 0 <= last_marker < target.index
        new_code = choice.reason == NEW_SYNC_POINT or (
            choice.reason == NEW_CALL_SITE and (triggers[target.index] not in IMPLICIT_TRIGGERS or after_loop)
        )
        if new_code and site and causes:
            # New code, not a changed graph: the nearest earlier graph is another computation
            # (an evaluation before the first training step), so its differences are no causes.
            kinds = ", ".join(dict.fromkeys(str(c.kind) for c in causes))
            note = (
                f"the first graph compiled at this call site: the earlier graphs come from other "
                f"lines or another compiled function, so this is new code rather than a changed "
                f"graph (against graph "
                f"{letters[choice.graph_hash]}: {kinds})"
            )
            names = (graph_name(modules.get(target.graph_hash)), graph_name(modules.get(choice.graph_hash)))
            # Before any earlier step ended (the pending graph of torch_xla.compile, then the step
            # function) or after the loop, it is a program starting or ending: not work that some
            # steps add (an evaluation between epochs), and not a recompile.
            when = "after the loop" if after_loop else "first step" if _in_first_step(target, first) else ""
            first_of_program = bool(when)
            causes = (_own_graph(site, users, *names, when=when),)
            attribution = (Attribution(0, str(causes[0].kind), causes[0].summary, lines=causes[0].sources),)
        elif causes and choice.sync.step == target.step and _in_first_step(target, first, last_step):
            # The same code run again within the run's first step with other sizes (a query and a
            # passage encoder, each cut at a library sync): each use compiles once, every step
            # replays both, so what differs is no change over steps.
            first_of_program = True
            note = (
                f"another use of the code of graph {letters[choice.graph_hash]} within the run's first "
                "step, with what differs below: each use compiles once and later steps replay both"
            )
        elif not causes:
            note = (
                "the two graphs print the same: the difference is in what the dump does not show "
                "(compile environment, sharding, buffer donors or elided constants)"
            )
    cited = [line for a in attribution for line in a.lines]
    cited += [t.line for a in attribution for t in a.tensors if t.line]
    if site:
        cited.append(site)
    baseline = (
        Baseline(letters[choice.graph_hash], choice.sync.index, choice.reason) if choice is not None else None
    )
    return Recompile(
        sync=target.index,
        step=target.step,
        variant=letters[target.graph_hash],
        graph_hash=target.graph_hash,
        call_site=site,
        trigger=triggers[target.index],
        frames=users,
        library_frames=library,
        baseline=baseline,
        causes=causes,
        attribution=attribution,
        lines=tuple(dict.fromkeys(cited)),
        note=note,
        compile_seconds=target.compile_seconds,
        notes=notes,
        first_of_program=first_of_program,
    )
