"""`parameter_shape` worded by which dimension changed: the batch dimension (a ragged last batch)
or a later one (a sequence length that varies), so the hint fits the pattern."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

# The module, not its name: value_origin reads this package's helpers, so importing it first
# runs this package's __init__ (and this file) while value_origin is half made.
from xlagraph.diagnose import value_origin
from xlagraph.diagnose.causes import Cause, CauseKind, Change
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_user_location, source_line, split_location
from xlagraph.diagnose.recognizers._causes import renamed
from xlagraph.diagnose.recognizers._dataflow import trained, updated_inputs, upstream
from xlagraph.diagnose.recognizers._fed_back import grown_state
from xlagraph.diagnose.recognizers._filled_lists import filled_until
from xlagraph.diagnose.recognizers._helper_calls import helper_size_calls
from xlagraph.diagnose.recognizers._host_numbers import python_number
from xlagraph.diagnose.recognizers._set_before import set_before
from xlagraph.diagnose.recognizers._source import calls_of_function, lines_matching, source_text, user_files
from xlagraph.diagnose.recognizers._statements import enclosing, loads, syntax_tree
from xlagraph.diagnose.recognizers._user_flow import list_tensors
from xlagraph.diagnose.shapes import shape_of
from xlagraph.match.shapes import dims

__all__ = [
    "BATCH_HINT",
    "FILTERED_HINT",
    "GROWN_BATCH_HINT",
    "RECOGNIZER",
    "SEQUENCE_HINT",
    "rows_kept",
    "with_helper_calls",
    "with_loader_line",
]

BATCH_HINT = fix("parameter_shape.batch")
GROWN_BATCH_HINT = fix("parameter_shape.grown_batch")
FILTERED_HINT = fix("parameter_shape.filtered_batch")
GROWING_STATE_HINT = fix("parameter_shape.growing_state")
SEQUENCE_HINT = fix("parameter_shape.sequence")
IMAGE_HINT = fix("parameter_shape.image")
WEIGHTS_HINT = fix("parameter_shape.weights")
LIST_HINT = fix("parameter_shape.list")
RESIZED_WEIGHTS_HINT = fix("parameter_shape.resized_weights")
SWITCHED_WEIGHTS_HINT = fix("parameter_shape.switched_weights")
PYTHON_LIST_HINT = fix("parameter_shape.python_list")
# `self.heads[task](x)`: a module looked up by a key and called.
_PICKED_MODULE = re.compile(r"\b[\w.]+\[[^\]]+\]\(")
OTHER_HINT = fix("parameter_shape.other")


def _gradient(comp, updates: dict[str, str], name: str) -> bool:  # type: ignore[no-untyped-def]
    """Input `name` is read by the update of a weight of its shape the step trains, and is no
    weight itself: that weight's gradient (handed over by torch.compile's backward, or the lazy
    one's), which changes shape with it."""
    shape = shape_of(comp, name)
    return any(
        p != name
        and shape_of(comp, p) == shape
        and trained(comp, updates, p)
        and name in upstream(comp.operands, [o])
        for o, p in updates.items()
    )


def _weights_changed(evidence: Evidence, shapes: list[Change]) -> bool:
    """Every input that changed shape is a weight the step updates, or the gradient of one, on
    one side at least, and one is a weight: another module's parameters, not data."""
    left, right = evidence.left.entry, evidence.right.entry
    updates_a, updates_b = updated_inputs(left, left.outputs), updated_inputs(right, right.outputs)
    weights_a, weights_b = set(updates_a.values()), set(updates_b.values())

    def weight(ch: Change) -> bool:
        return (ch.left in weights_a and trained(left, updates_a, ch.left)) or (
            ch.right in weights_b and trained(right, updates_b, ch.right)
        )

    def gradient(ch: Change) -> bool:
        return (ch.left in left.param_number and _gradient(left, updates_a, ch.left)) or (
            ch.right in right.param_number and _gradient(right, updates_b, ch.right)
        )

    return (
        bool(shapes) and any(weight(ch) for ch in shapes) and all(weight(ch) or gradient(ch) for ch in shapes)
    )


def _changed_axes(old: str, new: str) -> set[int]:
    a, b = dims(old), dims(new)
    if a is None or b is None or len(a) != len(b):
        return {-1}
    return {k for k, (x, y) in enumerate(zip(a, b, strict=True)) if x != y}


# Padding to each batch's longest item, in a collate function or a tokenizer call.
_PAD_TO_LONGEST = re.compile(
    r"max\(\s*len\(|\bpad_sequence\(|padding\s*=\s*(True|['\"]longest['\"])|\blengths?\.max\(\)"
)


def _with_padding_line(evidence: Evidence, cause: Cause) -> Cause:
    """Data that arrives through a loader carries no line of the user's in the graph, or only the
    line that moves it to the device; where the user's code pads each batch to its own longest
    item, that line is where the length is decided."""
    if any(is_user_location(loc) and not _TRANSFER.search(source_text(loc)) for loc in cause.sources):
        return cause
    lines = lines_matching(user_files(evidence), _PAD_TO_LONGEST, limit=2)
    if not lines:
        return cause
    # The call that pads to that length, just below (`F.pad(x, (0, width - len(x)))`).
    lines += [p for loc in lines[:1] if (p := _pad_call_below(loc))]
    return replace(cause, sources=tuple(dict.fromkeys([*lines, *cause.sources]))[:6])


_PAD_CALL = re.compile(r"\bpad\(|\bpad_sequence\(")
# A line that only moves a batch to the device: where the data arrives, not where its size is made.
_TRANSFER = re.compile(
    r"\.to\(\s*(?:device|dev|xla|self\.device)|\.to\(\s*xm\.xla_device|\bsend_cpu_data_to_device\("
)


def _with_arrival_lines(evidence: Evidence, cause: Cause) -> Cause:
    """The graph cites only the model's line that reads the batch (`series.unfold(...)`): the
    loop around the sync moves the batch to the device (`past = past.to(device)`), and the lines
    above it in that loop that set what it moves (`past, future = make_batch(context, gen)`,
    `context = SHORT if step < k else LONG`) decide its length: cited first. Only where the loop
    builds the batch it moves (a slice of a tensor made before the loop sizes nothing here)."""
    if any(_TRANSFER.search(source_text(loc)) for loc in cause.sources):
        return _with_loop_helper_line(evidence, cause)
    file, chain, loop, moved = _transfers(evidence.context.call_site)
    if not moved:
        return cause
    body = chain[loop][0].body
    found: list[int] = []
    wave: list[ast.stmt] = moved[:1]
    for _ in range(3):  # the transfer, what it moves, what sized that
        found += [s.lineno for s in wave]
        names = set().union(*(loads(s.value) for s in wave if isinstance(s, (ast.Assign, ast.Expr))))
        lines = {n for s in wave for n in set_before([*chain[: loop + 1], (s, body)], names)}
        wave = [s for s in body if s.lineno in lines and s.lineno not in found]
    if len(found) < 2:  # a slice of data made before the loop: nothing here sizes it
        return cause
    lines = [f"{file}:{n}" for n in sorted(set(found))]
    # A helper of the user's that makes the batch sizes it by a number passed in: its line, then
    # where that number is computed (a schedule), before the loop's own lines.
    sized = _sized_in_helper(file, [s for s in body if s.lineno in found])
    made = [*sized[:1], *(n for loc in sized[:1] for n in python_number(loc)[1])]
    return replace(cause, sources=tuple(dict.fromkeys([*made, *lines, *cause.sources]))[:6])


# Tensor factories whose leading arguments are the sizes (`torch.randn(batch, length)`).
_SIZED_BY_ARGS = frozenset({"randn", "rand", "zeros", "ones", "empty"})


def _sized_in_helper(file: str, stmts: list[ast.stmt] | list[ast.expr]) -> list[str]:
    """The lines of user functions that `stmts` (or a loop's iterable) call
    (`sentences(step, seq_len_for(step))`) that size a tensor by a parameter the call passes a
    computed value (`(batch, length)` of `torch.randint(1, VOCAB, (batch, length))`,
    `torch.randn(n, length)`): where the shape is made."""
    tree = syntax_tree(file)
    defs = {d.name: d for d in (tree.body if tree else ()) if isinstance(d, ast.FunctionDef)}
    found: list[str] = []
    for call in (n for s in stmts for n in ast.walk(s) if isinstance(n, ast.Call)):
        fn = defs.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if fn is None:
            continue
        params = [a.arg for a in fn.args.args]
        passed = [*zip(params, call.args, strict=False), *((k.arg, k.value) for k in call.keywords if k.arg)]
        varying = {p for p, value in passed if not isinstance(value, ast.Constant)}
        # The line of the call that sizes, not of its statement: a `return [{...} for ...]` that
        # builds a list of dicts spans lines, and the tensor's own line is the one to change.
        found += [
            f"{file}:{sized[0].lineno}"
            for stmt in fn.body
            if isinstance(stmt, (ast.Assign, ast.Return, ast.Expr))
            and (sized := [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _sizes(n) & varying])
        ]
    return list(dict.fromkeys(found))


def _with_loop_helper_line(evidence: Evidence, cause: Cause) -> Cause:
    """The graph cites the line that moves the batch to the device (lazy mode locates device data
    where it is moved: `batch = {k: v.to(dev) for k, v in batch.items()}`), and what it moves is
    bound by the step loop's own `for` over a helper of the user's that builds the batches
    (`for batch in make_batches(gen, 10, phase["candidates"], 4):`): where that helper sizes a
    tensor by a number the call passes (`torch.randn(queries, candidates, 24)`) decides the
    shape, cited first with where the number is computed; the transfer stays cited after it."""
    file, chain, loop, moved = _transfers(evidence.context.call_site)
    header = chain[loop][0] if moved else None
    cited = {f"{file}:{s.lineno}" for s in moved}
    if not isinstance(header, ast.For) or not cited & set(cause.sources):
        return cause
    bound = {n.id for n in ast.walk(header.target) if isinstance(n, ast.Name)}
    read = set().union(*(loads(s.value) for s in moved if isinstance(s, (ast.Assign, ast.Expr))))
    sized = _sized_in_helper(file, [header.iter]) if bound & read else []
    if not sized:
        return cause
    made = [sized[0], *python_number(sized[0])[1]]
    return replace(cause, sources=tuple(dict.fromkeys([*made, *cause.sources]))[:6])


def _sizes(call: ast.Call) -> set[str]:
    """The names a call passes as sizes: in a tuple or list argument, a `size=`, or the leading
    arguments of a factory that takes sizes that way."""
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "size")]
    named = getattr(call.func, "attr", getattr(call.func, "id", ""))
    shapes = [a for a in args if isinstance(a, (ast.Tuple, ast.List))]
    direct = call.args if named in _SIZED_BY_ARGS else []
    return {e.id for a in shapes for e in a.elts if isinstance(e, ast.Name)} | {
        a.id for a in direct if isinstance(a, ast.Name)
    }


def _transfers(site: str) -> tuple[str, list[tuple[ast.stmt, list[ast.stmt]]], int, list[ast.stmt]]:
    """The statements of the loop that runs the steps (the innermost loop around the sync's
    `site`) that move a batch to the device before the sync: its file, the statements around
    `site`, the depth of that loop in them, and those statements (none where there is no such
    loop or transfer)."""
    file, line = split_location(site)
    if not file or not line or not is_user_location(site):
        return file, [], 0, []
    chain = enclosing(file, line)
    loops = [d for d, (stmt, _) in enumerate(chain[:-1]) if isinstance(stmt, (ast.For, ast.While))]
    if not loops:
        return file, chain, 0, []
    loop = loops[-1]  # the loop that runs the steps
    body, here = chain[loop][0].body, chain[loop + 1][0]
    moved = [
        s
        for s in body[: body.index(here)]
        if isinstance(s, ast.Assign) and _TRANSFER.search(source_line(file, s.lineno))
    ]
    # A compiled step called with its batch moved in its arguments (`step(x.to(device))`): the
    # call itself is the transfer.
    if not moved and isinstance(here, (ast.Assign, ast.Expr)) and _moves(file, here):
        moved = [here]
    return file, chain, loop, moved


def _with_grown_batch_lines(evidence: Evidence, cause: Cause) -> Cause:
    """A batch that grew, where the graph cites no line that moves it to the device: under
    `torch_xla.compile` an input's device data is located at its first use inside the step (the
    model's or the loss's line), not where the batch was made. The statement of the step loop
    that moves the batch (`x = tokens[i : i + bs].to(device)`, or the call `step(x.to(device))`)
    is where the resized input is made; the Python number it reads, where the user computes it
    (the method's `base * growth**epoch` and `bs = sched.batch_size(epoch)`), is where the size
    is decided: cited first, the transfer second."""
    if any(_TRANSFER.search(source_text(loc)) for loc in cause.sources):
        return cause
    file, _, _, moved = _transfers(evidence.context.call_site)
    if not moved:
        return cause
    at = f"{file}:{moved[0].lineno}"
    sized = python_number(at)[1]
    # (the graph's own lines kept after them: the model's line that reads the batch)
    return replace(cause, sources=tuple(dict.fromkeys([*sized[:2], at, *cause.sources])))


def _moves(file: str, stmt: ast.stmt) -> bool:
    """Any line of `stmt` moves data to the device."""
    end = stmt.end_lineno or stmt.lineno
    return any(_TRANSFER.search(source_line(file, n)) for n in range(stmt.lineno, end + 1))


def _pad_call_below(location: str) -> str:
    file, _, line = location.rpartition(":")
    for k in range(int(line), int(line) + 4):
        if _PAD_CALL.search(source_line(file, k).split("#", 1)[0]):
            return f"{file}:{k}"
    return ""


def _int_vector(shape: str) -> bool:
    """`s64[13]`: a rank-1 integer tensor."""
    head, _, rest = shape.partition("[")
    return head[:1] in ("s", "u") and "," not in rest.split("]", 1)[0] and rest[:1] != "]"


def _vector(shape: str) -> bool:
    """`f32[3]`: a rank-1 tensor."""
    rest = shape.partition("[")[2]
    return rest[:1] != "]" and "," not in rest.split("]", 1)[0]


_LIST_MADE = "a vector made from a Python list (torch.tensor([...])) has another length: the list's"


def _list_lines(evidence: Evidence) -> list[str]:
    """A traced step's call passes a tensor made from a Python list (class weights from a list of
    counts that gained a class): where it is made, and the step's lines that read its size."""
    site = evidence.context.call_site
    return list_tensors(site) if site and is_user_location(site) else []


def _dim0(shape: str) -> int:
    sizes = dims(shape)
    return sizes[0] if sizes else 0


# A loader that keeps its last, smaller batch: where drop_last=True goes.
_LOADER = re.compile(r"\bDataLoader\((?![^)]*drop_last\s*=\s*True)")


def with_helper_calls(evidence: Evidence, cause: Cause) -> Cause:
    """A length a helper of the script's folder sizes (`token_batch(step, seq_len)` in another
    module): the script's call that passes it, and where that value is set, cited first; the
    helper's own line (where the tensor is shaped) and the model's stay after them."""
    lines = [x for x in helper_size_calls(evidence.context.call_site) if x not in cause.sources]
    if not lines:
        return cause
    return replace(cause, sources=tuple(dict.fromkeys([*lines, *cause.sources]))[:6])


def with_loader_line(evidence: Evidence, cause: Cause) -> Cause:
    """A ragged batch: the user's `DataLoader(...)` without `drop_last=True` is where the fix
    goes, cited after the lines the graph carries."""
    lines = lines_matching(user_files(evidence), _LOADER, limit=2)
    if not lines:
        return cause
    return replace(cause, sources=tuple(dict.fromkeys([*cause.sources, *lines]))[:6])


def _filtered(evidence: Evidence, cause: Cause) -> str:
    """The user's line that keeps a batch's rows by a mask, found from a line the cause cites or
    the call that ran the graph (a compiled step's inputs carry library lines only)."""
    lines = [*cause.sources[:3], evidence.context.call_site]
    return next((f for s in lines if s and is_user_location(s) and (f := value_origin.rows_filtered(s))), "")


def rows_kept(cause: Cause, lines: tuple[str, ...]) -> Cause:
    """A ragged batch (`parameter_shape.batch`) whose `lines`, cited for it from elsewhere (where a
    failed dynamo guard's tensor was made), keep the rows a mask selects: the filtered batch."""
    if cause.fix_id != "parameter_shape.batch" or not any(value_origin.rows_filtered(x) for x in lines):
        return cause
    return replace(cause, summary=cause.summary.replace(_RAGGED, _FILTERED), hint=FILTERED_HINT)


def _filled(evidence: Evidence, cause: Cause) -> tuple[str, ...]:
    """The statements that make tensors from the lists a loop fills until a condition stops it,
    and that loop (`filled_until`), found from a line the cause cites."""
    files = user_files(evidence)
    return next((f for s in cause.sources[:3] if is_user_location(s) and (f := filled_until(s, files))), ())


_FILLED = (
    "made from Python lists that a loop fills until a condition stops it (an episode, a generated "
    "sequence): the data decides their length, not a ragged last batch"
)
_RAGGED = "the batch dimension changed: a ragged last batch is typical"
_FILTERED = "rows kept by a mask on the host: the batch size follows the data"


def _image(shape: str) -> bool:
    """A float NCHW batch with few channels (1 to 4): the shape images arrive in."""
    sizes = dims(shape)
    return shape.startswith(("f", "bf")) and sizes is not None and len(sizes) == 4 and 1 <= sizes[1] <= 4


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    picked = [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_SHAPE]
    if not picked:
        return NOTHING
    out = []
    for i in picked:
        c = pending[i]
        shapes = [ch for ch in c.changes if ch.what == "shape"]  # not constants folded in
        axes = set().union(*(_changed_axes(ch.old, ch.new) for ch in shapes))
        grown = grown_state(evidence.left, shapes) if shapes else None
        if grown is not None:
            what, hint = (
                (
                    "state the step returned, grown by a concatenation and fed back as this input: its "
                    "size grows step after step, not the data's"
                ),
                GROWING_STATE_HINT,
            )
            c = replace(c, sources=tuple(dict.fromkeys([*grown, *c.sources]))[:6])
        elif _weights_changed(evidence, shapes):
            what, hint = "the inputs are weights the step updates, not data", WEIGHTS_HINT
            files = user_files(evidence)
            lookups = lines_matching(files, _PICKED_MODULE, limit=2)
            if evidence.context.call_site and lookups:  # one run: the model did not change, the pick did
                what, hint = "weights of another module, picked by a key on this step", SWITCHED_WEIGHTS_HINT
                c = replace(c, sources=tuple(dict.fromkeys([*lookups, *c.sources]))[:6])
            elif evidence.context.call_site:  # one run: the weights were resized in place
                what, hint = "the model's weights were resized during the run", RESIZED_WEIGHTS_HINT
                callers = [
                    x
                    for loc in c.sources
                    if is_user_location(loc)
                    for x in calls_of_function(loc, files, limit=2)
                ]
                c = replace(c, sources=tuple(dict.fromkeys([*callers, *c.sources]))[:6])
        elif axes == {0} and (kept := _filtered(evidence, c)):  # a filter's batch may shrink or grow
            what, hint = _FILTERED, FILTERED_HINT
            c = replace(c, sources=tuple(dict.fromkeys([kept, *c.sources]))[:6])
        elif axes == {0} and (filled := _filled(evidence, c)):  # lists a loop fills until it stops
            what, hint = _FILLED, LIST_HINT
            c = replace(c, sources=tuple(dict.fromkeys([*filled, *c.sources]))[:6])
        elif axes == {0} and all(_int_vector(ch.old) and _int_vector(ch.new) for ch in shapes):
            what, hint = "only lists of indices or labels changed length", LIST_HINT
            c = replace(c, sources=tuple(dict.fromkeys([*_list_lines(evidence), *c.sources]))[:6])
        elif axes == {0} and all(_vector(ch.old) for ch in shapes) and (made := _list_lines(evidence)):
            what, hint = _LIST_MADE, PYTHON_LIST_HINT
            c = replace(c, sources=tuple(dict.fromkeys([*made, *c.sources]))[:6])
        elif axes == {0} and all(_dim0(ch.new) > _dim0(ch.old) for ch in shapes):
            what, hint = "the batch size grew: a new batch size, not a ragged last batch", GROWN_BATCH_HINT
            c = _with_grown_batch_lines(evidence, c)
        elif axes == {0}:
            what, hint = _RAGGED, BATCH_HINT
            c = with_loader_line(evidence, c)
        elif axes and axes <= {2, 3} and all(_image(ch.old) for ch in shapes):
            what, hint = "an image's height or width changed", IMAGE_HINT
        elif axes and -1 not in axes and 0 not in axes:
            what, hint = "a non-batch dimension changed: a varying sequence length is typical", SEQUENCE_HINT
            padded = _with_padding_line(evidence, c)
            c = padded if padded is not c else _with_arrival_lines(evidence, c)
            c = with_helper_calls(evidence, c)
        else:
            what, hint = "input shapes changed", OTHER_HINT
        out.append(renamed(c, CauseKind.PARAMETER_SHAPE, f"{c.summary}; {what}", hint))
    return Recognized(tuple(out), frozenset(picked))


RECOGNIZER = Recognizer("input_shape", _recognize)
