"""The metamorphic corpus (every real entry module in fixtures/) and the judge of one diff.

`verdict` runs the real `xlagraph.diff.diff_modules` path on a normalized module and its
transformed text and compares the causes with what the transformations guarantee: exactly the
kinds they imply, with the exact mappings, and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import re
from collections.abc import Iterator, Mapping
from functools import cache
from itertools import combinations
from pathlib import Path

from tests.metamorphic.transforms import COMBINABLE, Entry, Expected, NotApplicable, apply, normalize
from xlagraph.diagnose import CauseKind
from xlagraph.diff import DiffResult, diff_modules
from xlagraph.parse.hlo import parse_hlo

__all__ = ["AMBIGUOUS_CASES", "CASES", "Outcome", "corpus", "run_case"]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

# Every single transformation and every pair of two different ones.
CASES: tuple[tuple[str, ...], ...] = tuple((n,) for n in COMBINABLE) + tuple(combinations(COMBINABLE, 2))
_PERMUTATION = {CauseKind.PARAMETER_PERMUTATION, CauseKind.OUTPUT_PERMUTATION}
# Where every output is an input passed straight through with the same shape, permuting inputs is
# permuting outputs: the cases with these have no single right answer on such a module.
AMBIGUOUS_CASES = frozenset({"permute_params", "permute_outputs"})


def _module_texts(max_bytes: int | None = None) -> Iterator[tuple[str, str]]:
    """(label, text) of every HLO module file under fixtures/ (save files: each graph); with
    `max_bytes`, only files (compressed: a quarter) no larger."""
    manifest = json.loads((FIXTURES / "xla_conformance" / "MANIFEST.json").read_text())
    for m in manifest["modules"]:
        if m.get("xla", {}).get("accepted"):
            path = FIXTURES / "xla_conformance" / "modules" / m["file"]
            yield f"xla_conformance/modules/{m['file']}", path.read_text()
    for top in ("jax", "torch_xla"):
        for path in sorted((FIXTURES / top).rglob("*")):
            name = path.name
            if not path.is_file():
                continue
            rel = str(path.relative_to(FIXTURES))
            if max_bytes is not None and path.stat().st_size * (4 if name.endswith(".xz") else 1) > max_bytes:
                continue
            if name.endswith(".xz") and ".txt" in name:
                text = lzma.decompress(path.read_bytes()).decode("utf-8", "replace")
            elif name.endswith((".hlo", ".hlo.txt")) or (
                name.endswith(".txt") and "before_optimizations" in name
            ):
                text = path.read_text(errors="replace")
            elif name.startswith("save_hlo") and name.endswith(".txt"):
                yield from _save_file_graphs(rel, path.read_text(errors="replace"))
                continue
            else:
                continue
            if text.lstrip().startswith("HloModule"):
                yield rel, text


def _save_file_graphs(rel: str, text: str) -> Iterator[tuple[str, str]]:
    """The HLO graphs of an XLA_SAVE_TENSORS_FILE (format hlo): each from `HloModule` to the
    line before the next block's header or its `Graph Hash:` line."""
    blocks = text.split("\nHloModule ")
    for k, block in enumerate(blocks[1:]):
        body = "HloModule " + block
        end = body.find("\n## ")
        cut = [p for p in (end, body.find("\n["), body.find("\nGraph Hash:")) if p > 0]
        yield f"{rel}#{k}", body[: min(cut)] if cut else body


def corpus(
    max_instructions: int | None = None, max_bytes: int | None = None, min_instructions: int = 0
) -> list[tuple[str, str]]:
    """(label, normalized text) of distinct modules that the transformations can read, with
    `min_instructions` to `max_instructions` entry instructions; sorted by label."""
    seen: set[str] = set()
    out = []
    for label, text in _module_texts(max_bytes):
        try:
            norm = normalize(text)
            entry = Entry.parse(norm)
        except NotApplicable:
            continue
        if max_instructions is not None and len(entry.body) > max_instructions:
            continue
        if len(entry.body) < min_instructions:
            continue
        digest = hashlib.sha256("\n".join(i.text().strip() for i in entry.body).encode()).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        out.append((label, norm))
    return sorted(out)


class Outcome:
    """`status`: pass, fail (with `problems`), n/a (the transformations do not apply), or bad
    (the module does not diff identical with itself, or does not parse)."""

    def __init__(self, status: str, problems: tuple[str, ...] = (), kinds: tuple[str, ...] = ()) -> None:
        self.status, self.problems, self.kinds = status, problems, kinds

    def __repr__(self) -> str:
        return f"Outcome({self.status}, {self.problems}, {self.kinds})"


def _seed(label: str, names: tuple[str, ...]) -> int:
    return int(hashlib.sha256(f"{label}|{'+'.join(names)}".encode()).hexdigest()[:8], 16)


def passthrough(text: str) -> bool:
    """Every output of the entry is one of its inputs returned as it is: there permuting the
    inputs is permuting the outputs (the same text either way), so a permutation has no single
    right answer."""
    try:
        entry = Entry.parse(text)
        outs = entry.outputs()
    except NotApplicable:
        return False
    by = entry.by_name()
    return bool(outs) and all(o in by and by[o].opcode == "parameter" for o in outs)


def run_case(label: str, text: str, names: tuple[str, ...]) -> Outcome:
    if AMBIGUOUS_CASES.intersection(names) and passthrough(text):
        return Outcome("n/a", ("no single right answer: every output is an input returned as it is",))
    try:
        new, exp = apply(text, names, _seed(label, names))
    except NotApplicable as e:
        return Outcome("n/a", (str(e),))
    try:
        a, b = parse_hlo(text, "a.hlo"), parse_hlo(new, "b.hlo")
    except Exception as e:
        return Outcome("bad", (f"parse: {e}",))
    result = diff_modules(a, b)
    problems = judge(result, exp, output_values(text), dead_inputs(new), text)
    kinds = tuple(sorted(str(c.kind) for c in result.causes))
    return Outcome("fail" if problems else "pass", tuple(problems), kinds)


_METADATA = re.compile(r",?\s*metadata=\{[^}]*\}")


_CALLED = re.compile(r"\b(to_apply|calls|body|condition|comparator)=%?([\w.\-]+)")
_HEAD = re.compile(r"^%?([\w.\-]+) .*\{\s*$")
_DEFINED = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=")
_NAME = re.compile(r"%?[\w.\-]+")


def _computation_hashes(lines: list[str]) -> dict[str, int]:
    """A hash of each called computation's body, its own names and metadata left out and the
    computations it calls by their hashes: two copies of one reducer are one function."""
    out: dict[str, int] = {}
    name, body = "", []
    for line in lines:
        head = _HEAD.match(line)
        if head and not line.startswith("HloModule"):
            name, body = head.group(1), []
        elif line.strip() == "}" and name:
            local = {m.group(1): f"#{k}" for k, ln in enumerate(body) if (m := _DEFINED.match(ln))}
            text = []
            for ln in body:
                ln = _CALLED.sub(
                    lambda m: f"{m.group(1)}#{out.get(m.group(2), m.group(2))}", _METADATA.sub("", ln)
                )
                text.append(
                    _NAME.sub(lambda m, local=local: local.get(m.group(0).lstrip("%"), m.group(0)), ln)
                )
            out[name] = hash(tuple(text))
            name = ""
        elif name:
            body.append(line)
    return out


def output_values(text: str, numbers: Mapping[int, int] | None = None) -> list[int]:
    """For each output of the module's entry, a hash of exactly what it computes: its
    instruction and everything it reads, with constants' values and parameters' numbers (by
    this module's own reader, not xlagraph's). Two outputs with equal hashes return the same
    value on every input, so which of them is which cannot be observed: swapping them is the
    same program (torch_xla hashes both orders alike and compiles once). `numbers`: parameter
    numbers read as others (a relabelling of the inputs)."""
    try:
        entry = Entry.parse(text)
        outs = entry.outputs()
    except NotApplicable:
        return []
    by = entry.by_name()
    memo: dict[str, int] = {}
    callees = _computation_hashes(entry.before)

    def value(name: str) -> int:
        stack = [name]
        while stack:
            n = stack[-1]
            ins = by.get(n)
            todo = [o for o in (ins.operands if ins else []) if o not in memo and o in by]
            if todo:
                stack += todo
                continue
            stack.pop()
            if ins is None:
                memo[n] = hash(("external", n))
                continue
            literal = ins.args if ins.opcode in ("parameter", "constant") else ""
            if ins.opcode == "parameter" and numbers and literal.strip().isdigit():
                literal = str(numbers.get(int(literal), int(literal)))
            rest = _CALLED.sub(
                lambda m: f"{m.group(1)}#{callees.get(m.group(2), m.group(2))}", _METADATA.sub("", ins.rest)
            )
            memo[n] = hash(
                (ins.opcode, ins.shape, literal, rest, tuple(memo.get(o, 0) for o in ins.operands))
            )
        return memo[name]

    return [value(o) for o in outs]


def _interchangeable(values: list[int], exp: Expected):  # type: ignore[no-untyped-def]
    """A's output slot -> the first slot computing the same value (itself where none does)."""
    first: dict[int, int] = {}
    for k, v in enumerate(values):
        first.setdefault(v, k)
    return lambda i: first.get(values[i], i) if i < len(values) else i


def _observable(exp: Expected, same) -> bool:  # type: ignore[no-untyped-def]
    """The kept outputs come out in another order, as far as their values tell."""
    kept = sorted(exp.output_moves().items())
    return [same(i) for i, _ in kept] != [same(i) for i, _ in sorted(kept, key=lambda p: p[1])]


def symmetric(
    text: str,
    exp: Expected,
    moved_in: set[tuple[int, int]],
    moved_out: set[tuple[int, int]],
    removed: frozenset[int] = frozenset(),
) -> bool:
    """The diff's mapping (inputs and outputs it names moved; the rest in place) is the
    transformation's composed with a symmetry of A: A's inputs and outputs relabelled by it
    compute, slot by slot, what A computes. Two look-alike groups used alike (the two towers'
    weights and their gradients) can be paired either way: both pairings are right, and which
    of them the transformation built cannot be observed. `removed`: the outputs the diff names
    removed; where it names one (of two look-alike cones, the twin of the one dropped), the
    outputs it keeps hold their order in B unless it names them moved, and the symmetry must
    take the removed ones to those the transformation dropped."""
    a_in = {b: a for a, b in exp.params.items()}
    a_out = {b: a for a, b in exp.output_moves().items()}
    eng_in = {**{a: a for a in exp.params}, **dict(moved_in)}
    kept = [a for a in sorted(exp.outputs) if a not in removed]
    eng_out = {a: k for k, a in enumerate(kept)} if removed else {a: a for a in exp.output_moves()}
    eng_out.update(moved_out)
    if any(b not in a_in for b in eng_in.values()) or any(b not in a_out for b in eng_out.values()):
        return False
    sigma_in = {a: a_in[b] for a, b in eng_in.items()}
    sigma_out = {a: a_out[b] for a, b in eng_out.items() if removed or a in exp.output_moves()}
    if sorted(sigma_in.values()) != sorted(sigma_in) or len(set(sigma_out.values())) != len(sigma_out):
        return False
    if all(a == b for a, b in sigma_in.items()) and all(a == b for a, b in sigma_out.items()):
        return False  # the transformation's own mapping: judged as it is
    before, after = output_values(text), output_values(text, sigma_in)
    dropped = sorted(a for a, b in exp.outputs.items() if b is None)
    return (
        bool(before)
        and all(i < len(after) and j < len(before) and after[i] == before[j] for i, j in sigma_out.items())
        and (
            not removed
            or (
                all(r < len(after) for r in removed)
                and sorted(after[r] for r in removed) == sorted(before[r] for r in dropped)
            )
        )
    )


def _same_constant(text: str, want: str, got: str) -> bool:
    """A's constant `got` is `want`'s twin (same shape and literal): under a symmetry of A that
    swaps look-alike cones, the changed constant's counterpart in A is either twin."""
    by = Entry.parse(text).by_name()
    return want in by and got in by and (by[got].shape, by[got].args) == (by[want].shape, by[want].args)


def dead_inputs(text: str) -> dict[int, int]:
    """B's inputs that nothing reads -> the first of them with the same shape and attributes
    (metadata included). A dropped output can leave two look-alike inputs unread (an SGD update's
    weight and buffer, same shape, same source line): which of them went where cannot be observed,
    as with outputs that compute the same value."""
    try:
        entry = Entry.parse(text)
    except NotApplicable:
        return {}
    live = entry.live()
    first: dict[tuple[str, str], int] = {}
    return {
        k: first.setdefault((ins.shape, ins.rest), k)
        for k, ins in sorted(entry.params().items())
        if ins.name not in live
    }


def _same_but_unread(dead: dict[int, int], got: set[tuple[int, int]], want: set[tuple[int, int]]) -> bool:
    """`got` is `want` but for which of B's unread look-alike inputs (`dead_inputs`) an input went to."""
    if not dead:
        return False
    g, w = dict(got), dict(want)

    def kind(j: int) -> int:
        return dead.get(j, j)

    return set(g) <= set(w) and all(kind(g.get(i, i)) == kind(j) for i, j in w.items())


def judge(
    result: DiffResult,
    exp: Expected,
    values: list[int] | None = None,
    dead: dict[int, int] | None = None,
    a_text: str = "",
) -> list[str]:
    """What the diff gets wrong against `exp` (empty: exactly right). `values`: A's outputs'
    `output_values`; outputs that compute the same value are interchangeable, and only a
    mapping or a reordering that some value tells apart is required or may be named. `dead`: B's
    `dead_inputs`, unread look-alikes, interchangeable in the input mapping. `a_text`: A's text,
    where a mapping that is the transformation's up to a symmetry of A is right (`symmetric`)."""
    problems: list[str] = []
    causes = result.causes
    kinds = {c.kind for c in causes}
    want: set[CauseKind] = set()
    if any(b is None for b in exp.outputs.values()):
        want.add(CauseKind.OUTPUT_REMOVED)
    if exp.added:
        want.add(CauseKind.OUTPUT_ADDED)
    if exp.constant:
        want.add(CauseKind.CONSTANT_VALUE)
    if exp.reshaped:
        want.add(CauseKind.PARAMETER_SHAPE)
    extra = kinds - want - _PERMUTATION
    missing = want - kinds
    if extra:
        problems.append("extra " + ",".join(sorted(map(str, extra))))
    if missing:
        problems.append("missing " + ",".join(sorted(map(str, missing))))
    moved_in = {(m.left, m.right) for c in causes for m in c.mapping if m.what == "input"}
    moved_out = {(m.left, m.right) for c in causes for m in c.mapping if m.what == "output"}
    # computed once, where a mapping differs from the transformation's
    removed = frozenset(
        int(ch.old.split(":")[0])
        for c in causes
        if c.kind is CauseKind.OUTPUT_REMOVED
        for ch in c.changes
        if ch.what == "output" and ch.old
    )
    sym = cache(lambda: bool(a_text) and symmetric(a_text, exp, moved_in, moved_out, removed))
    if exp.param_permuted():
        if not kinds & _PERMUTATION:
            problems.append("parameter permutation not named")
        want_in = set(exp.params.items())
        if (
            not moved_in or {p for p in moved_in if p[0] != p[1]} != {p for p in want_in if p[0] != p[1]}
        ) and not (_same_but_unread(dead or {}, moved_in, want_in) or (moved_in and sym())):
            problems.append(f"input mapping {sorted(p for p in moved_in if p[0] != p[1])[:6]}")
    elif {p for p in moved_in if p[0] != p[1]}:
        problems.append(f"invented input moves {sorted(p for p in moved_in if p[0] != p[1])[:6]}")
    same = _interchangeable(values or [], exp)
    # Where the diff's mapping is the transformation's up to a symmetry of A, a reordering of
    # outputs can be one of inputs (two look-alike cones: swapping their outputs is swapping their
    # inputs): the kinds to name follow from the diff's own mapping then.
    moves_out = any(i != j for i, j in moved_out)
    if _observable(exp, same):
        if CauseKind.OUTPUT_PERMUTATION not in kinds and not (sym() and not moves_out):
            problems.append("output permutation not named")
        want_out = set(exp.output_moves().items())
        if {(same(i), j) for i, j in moved_out} != {(same(i), j) for i, j in want_out} and not sym():
            problems.append(f"output mapping {sorted(moved_out - want_out)[:6]}")
    elif CauseKind.OUTPUT_PERMUTATION in kinds and not (
        # the transformation's own moves (look-alikes told apart by their source lines), or
        # those composed with a symmetry of A, are no invention
        {p for p in moved_out if p[0] != p[1]} == {p for p in exp.output_moves().items() if p[0] != p[1]}
        or (moves_out and sym())
    ):
        problems.append("invented output permutation")
    if exp.terms:  # a sum's terms in another order: the reordering, at the sum's nodes
        named = [c for c in causes if c.kind is CauseKind.PARAMETER_PERMUTATION]
        if not any(set(exp.names[n] for n in exp.terms) & set(c.right) for c in named):
            problems.append("reordered terms not named")
    elif not exp.param_permuted() and CauseKind.PARAMETER_PERMUTATION in kinds:
        problems.append("invented parameter permutation")
    for c in causes:
        if c.kind is CauseKind.OUTPUT_REMOVED:
            got = sorted(int(ch.old.split(":")[0]) for ch in c.changes if ch.what == "output" and ch.old)
            want = sorted(a for a, b in exp.outputs.items() if b is None)
            if sorted(map(same, got)) != sorted(map(same, want)) and not sym():
                problems.append(f"removed outputs {got}")
        if c.kind is CauseKind.OUTPUT_ADDED:
            got = sorted(int(ch.new.split(":")[0]) for ch in c.changes if ch.what == "output" and ch.new)
            if got != sorted(exp.added):
                problems.append(f"added outputs {got} not {sorted(exp.added)}")
        named = exp.names.get(exp.constant) in c.right and (
            exp.constant in c.left or (sym() and any(_same_constant(a_text, exp.constant, n) for n in c.left))
        )
        if c.kind is CauseKind.CONSTANT_VALUE and exp.constant and not named:
            problems.append("constant not named")
        if c.kind is CauseKind.PARAMETER_SHAPE and exp.reshaped:
            lnum = result.left.entry.param_number
            got_shapes = {
                (lnum.get(ch.left, -1), ch.old, ch.new)
                for ch in c.changes
                if ch.what == "shape" and ch.left in lnum
            }
            wanted = {(k, o, n) for k, (o, n) in exp.reshaped.items()}
            if got_shapes != wanted:
                problems.append(f"shapes {sorted(got_shapes ^ wanted)[:4]}")
    return problems
