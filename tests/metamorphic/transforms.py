"""Transformations of HLO module TEXT whose effect on a diff is known by construction.

Independent of xlagraph on purpose: the text is read with a small line parser of its own, so a
bug in xlagraph's parser or canonical form cannot hide in both the transformation and the code
under test. Every transformation edits the ENTRY computation only and records what a correct
diff must report (`Expected`): which inputs and outputs went where, what was added or removed,
which constant changed, which inputs changed shape.

A module is first `normalized` (the entry's signature and the header's layout, aliasing and
donor lists dropped, since they name positions that a permutation would have to rewrite); the
baseline of every comparison is the normalized text, and transformations apply to that.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

__all__ = [
    "COMBINABLE",
    "TRANSFORMS",
    "UPDATE_SWAP",
    "Entry",
    "Expected",
    "NotApplicable",
    "apply",
    "normalize",
    "swap_updates",
]


class NotApplicable(Exception):
    """The transformation has nothing to act on in this module (no tuple root, one input...)."""


_LINE = re.compile(r"^(\s*)(ROOT\s+)?(%?)([\w.\-]+)\s*=\s*(.*)$")
_HEADER_DROP = re.compile(r",\s*(entry_computation_layout|input_output_alias|buffer_donor)=")
_SHAPE = re.compile(r"^(\(|[a-z][a-z0-9]*\[)")
_INDEX_COMMENT = re.compile(r"/\*index=\d+\*/")
_COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor"})


def _balanced(text: str, start: int) -> int:
    """Index just past the bracket group opening at `start`."""
    depth = 0
    for k in range(start, len(text)):
        c = text[k]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return k + 1
    raise NotApplicable("unbalanced brackets")


def _split(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for c in text:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


@dataclass
class Ins:
    """One instruction line of the entry, split into its parts."""

    indent: str
    root: bool
    sigil: str
    name: str
    shape: str
    opcode: str
    args: str  # text between the opcode's parentheses
    rest: str  # attributes after them, with the leading ", "

    @property
    def operands(self) -> list[str]:
        if self.opcode in ("parameter", "constant"):
            return []
        return [a.split()[-1].lstrip("%") for a in _split(self.args) if a]

    def text(self) -> str:
        head = f"{self.indent}{'ROOT ' if self.root else ''}{self.sigil}{self.name}"
        return f"{head} = {self.shape} {self.opcode}({self.args}){self.rest}"


def _parse_ins(line: str) -> Ins | None:
    m = _LINE.match(line)
    if not m:
        return None
    indent, root, sigil, name, body = m.groups()
    k = 0
    if body.startswith("("):
        k = _balanced(body, 0)
    else:
        while k < len(body) and body[k] != " ":
            if body[k] in "[{":
                k = _balanced(body, k)
            else:
                k += 1
    shape, after = body[:k], body[k:].lstrip()
    om = re.match(r"([\w\-]+)\(", after)
    if not om:
        return None
    end = _balanced(after, om.end() - 1)
    args = _INDEX_COMMENT.sub("", after[om.end() : end - 1])
    return Ins(indent, bool(root), sigil, name, shape, om.group(1), args, after[end:])


@dataclass
class Entry:
    """A module's text with its ENTRY computation parsed into instructions."""

    before: list[str]
    header: str
    body: list[Ins]
    after: list[str]

    @classmethod
    def parse(cls, text: str) -> Entry:
        lines = text.split("\n")
        start = next((k for k, ln in enumerate(lines) if ln.startswith("ENTRY ")), None)
        if start is None:
            raise NotApplicable("no ENTRY")
        body: list[Ins] = []
        k = start + 1
        while k < len(lines) and lines[k].strip() != "}":
            if lines[k].strip():
                ins = _parse_ins(lines[k])
                if ins is None:
                    raise NotApplicable(f"unreadable line {lines[k][:60]!r}")
                body.append(ins)
            k += 1
        if k == len(lines):
            raise NotApplicable("ENTRY not closed")
        entry = cls(lines[:start], lines[start], body, lines[k:])
        if any(not _SHAPE.match(i.shape) for i in body):
            raise NotApplicable("a shape this reader does not know")
        if sum(i.root for i in body) != 1:
            raise NotApplicable("no single ROOT")
        return entry

    def text(self) -> str:
        return "\n".join([*self.before, self.header, *(i.text() for i in self.body), *self.after])

    def copy(self) -> Entry:
        return Entry(list(self.before), self.header, [replace(i) for i in self.body], list(self.after))

    @property
    def root(self) -> Ins:
        return next(i for i in self.body if i.root)

    def by_name(self) -> dict[str, Ins]:
        return {i.name: i for i in self.body}

    def params(self) -> dict[int, Ins]:
        out = {}
        for i in self.body:
            if i.opcode == "parameter":
                out[int(i.args.strip())] = i
        return out

    def live(self) -> set[str]:
        names = self.by_name()
        seen, stack = set(), [self.root.name]
        while stack:
            n = stack.pop()
            if n in seen or n not in names:
                continue
            seen.add(n)
            stack += names[n].operands
        return seen

    def outputs(self) -> list[str]:
        """The root tuple's operands (NotApplicable for a root that is no flat tuple)."""
        root = self.root
        if root.opcode != "tuple":
            raise NotApplicable("root is not a tuple")
        if any(a.startswith("(") for a in _split(root.shape[1:-1])):
            raise NotApplicable("nested tuple root")
        if root.rest.strip(", ").split("=")[0] not in ("", "metadata"):
            raise NotApplicable("root tuple has attributes")
        return root.operands


def normalize(text: str) -> str:
    """The module with positional bookkeeping dropped: the entry's signature and the header's
    layout, aliasing and donor lists (a permutation would have to rewrite them)."""
    entry = Entry.parse(text)
    lines = entry.before
    for k, ln in enumerate(lines):
        if ln.startswith("HloModule "):
            m = _HEADER_DROP.search(ln)
            while m:
                end = _balanced(ln, ln.index("{", m.end() - 1))
                ln = ln[: m.start()] + ln[end:]
                m = _HEADER_DROP.search(ln)
            lines[k] = ln
    head = entry.header
    name_end = head.find(" (")
    if name_end > 0:
        head = head[:name_end] + " {"
    entry.header = head
    if any("control-predecessors" in i.rest for i in entry.body):
        raise NotApplicable("control predecessors")
    return entry.text()


# ---------------------------------------------------------------------------------------------
# What a correct diff reports.


@dataclass
class Expected:
    """The bookkeeping of the transformations applied so far, from A's side to B's."""

    n_outputs: int
    n_params: int
    outputs: dict[int, int | None]  # A's output -> B's (None: dropped)
    added: list[int] = field(default_factory=list)  # B's new outputs
    params: dict[int, int] = field(default_factory=dict)  # A's input -> B's
    names: dict[str, str] = field(default_factory=dict)  # A's instruction name -> B's
    constant: str = ""  # A's name of the constant whose value changed
    reshaped: dict[int, tuple[str, str]] = field(default_factory=dict)  # A's input -> (old, new)
    dropped_shapes: set[str] = field(default_factory=set)
    updates: tuple[int, ...] = ()  # A's outputs of the updates `swap_updates` swapped
    terms: tuple[str, ...] = ()  # A's nodes of the sum whose terms `swap_terms` reordered
    kept: frozenset[str] = frozenset()  # A's instructions of those terms: no other change there
    applied: tuple[str, ...] = ()

    @classmethod
    def start(cls, entry: Entry) -> Expected:
        try:
            n = len(entry.outputs())
        except NotApplicable:
            n = 1
        ps = entry.params()
        return cls(
            n, len(ps), {i: i for i in range(n)}, [], {k: k for k in ps}, {i.name: i.name for i in entry.body}
        )

    def output_moves(self) -> dict[int, int]:
        return {i: j for i, j in self.outputs.items() if j is not None}

    def output_permuted(self) -> bool:
        kept = sorted(self.output_moves().items())
        return [j for _, j in kept] != sorted(j for _, j in kept)

    def param_permuted(self) -> bool:
        return any(a != b for a, b in self.params.items())


# ---------------------------------------------------------------------------------------------
# Colours that tell inputs (and outputs) apart, for choosing what to permute: two inputs with
# different colours can never be interchangeable, so a correct diff can always pair them.


def _colours(entry: Entry, rounds: int = 4) -> dict[str, int]:
    ins = entry.by_name()
    users: dict[str, list[tuple[str, int]]] = {n: [] for n in ins}
    for i in entry.body:
        for k, o in enumerate(i.operands):
            if o in users:
                users[o].append((i.name, -1 if i.opcode in _COMMUTATIVE else k))
    attrs = {n: re.sub(r",?\s*metadata=\{[^}]*\}", "", i.rest) for n, i in ins.items()}
    col = {
        n: hash((i.opcode, _dims(i.shape), attrs[n] if i.opcode != "parameter" else ""))
        for n, i in ins.items()
    }
    for _ in range(rounds):
        new = {}
        for n, i in ins.items():
            ops = [col.get(o, 0) for o in i.operands]
            if i.opcode in _COMMUTATIVE:
                ops = sorted(ops)
            us = sorted((col[u], k) for u, k in users[n])
            new[n] = hash((col[n], tuple(ops), tuple(us)))
        col = new
    return col


def _dims(shape: str) -> str:
    return re.sub(r"\{[^}]*\}", "", _INDEX_COMMENT.sub("", shape)).replace(" ", "")


def _kind(shape: str) -> str:
    """Element type and rank: an output of another size in the slot of a dropped one of this kind
    may as well be that one resized (a batch), which a diff may rightly say."""
    dims = _dim_list(shape)
    return f"{shape.split('[')[0]}/{len(dims[0]) if dims else -1}"


def _distinct(names: list[str], col: dict[str, int]) -> list[int]:
    """Positions in `names` whose colour no other name there has."""
    count: dict[int, int] = {}
    for n in names:
        count[col[n]] = count.get(col[n], 0) + 1
    return [k for k, n in enumerate(names) if count[col[n]] == 1]


def _derangement(items: list[int], rng: random.Random) -> dict[int, int]:
    """A permutation of `items` that moves every one (a rotation of a shuffled order)."""
    order = list(items)
    rng.shuffle(order)
    return {order[k]: order[(k + 1) % len(order)] for k in range(len(order))}


# ---------------------------------------------------------------------------------------------
# The transformations. Each edits `entry` in place and updates `exp`.


def rename(entry: Entry, exp: Expected, rng: random.Random) -> None:
    names = [i.name for i in entry.body]
    fresh = [f"v{k}.{rng.randrange(10**6)}" for k in range(len(names))]
    rng.shuffle(fresh)
    new = dict(zip(names, fresh, strict=True))
    for i in entry.body:
        i.name = new[i.name]
        if i.opcode not in ("parameter", "constant"):
            parts = _split(i.args)
            out = []
            for p in parts:
                head, _, last = p.rpartition(" ")
                sig = "%" if last.startswith("%") else ""
                ref = new.get(last.lstrip("%"))
                if ref is None:
                    raise NotApplicable(f"operand {last!r} not in the entry")
                out.append(f"{head} {sig}{ref}".strip())
            i.args = ", ".join(out)
    exp.names = {a: new[b] for a, b in exp.names.items()}


def reorder(entry: Entry, exp: Expected, rng: random.Random) -> None:
    """Another topological order of the same instructions (ROOT stays last)."""
    body = [i for i in entry.body if not i.root]
    names = {i.name for i in body}
    deps = {i.name: {o for o in i.operands if o in names} for i in body}
    users: dict[str, list[str]] = {n: [] for n in names}
    for n, ds in deps.items():
        for d in ds:
            users[d].append(n)
    ready = sorted(n for n, ds in deps.items() if not ds)
    by = {i.name: i for i in body}
    out: list[Ins] = []
    left = {n: len(ds) for n, ds in deps.items()}
    while ready:
        n = ready.pop(rng.randrange(len(ready)))
        out.append(by[n])
        for u in users[n]:
            left[u] -= 1
            if left[u] == 0:
                ready.append(u)
    if len(out) != len(body):
        raise NotApplicable("cycle or dead code reading the root")
    entry.body = [*out, entry.root]


def permute_params(entry: Entry, exp: Expected, rng: random.Random) -> None:
    ps = entry.params()
    if any(p.shape.startswith("(") for p in ps.values()):
        raise NotApplicable("tuple parameter")
    col = _colours(entry)
    numbers = sorted(ps)
    movable = [numbers[k] for k in _distinct([ps[n].name for n in numbers], col)]
    if len(movable) < 2:
        raise NotApplicable("fewer than two distinguishable inputs")
    perm = _derangement(movable[: max(2, min(len(movable), 6))], rng)
    for k, ins in ps.items():
        ins.args = str(perm.get(k, k))
    exp.params = {a: perm.get(b, b) for a, b in exp.params.items()}


def _set_outputs(entry: Entry, names: list[str], shapes: list[str]) -> None:
    root = entry.root
    root.shape = "(" + ", ".join(shapes) + ")"
    sig = "%" if "%" in root.args else ""
    root.args = ", ".join(f"{sig}{n}" for n in names)


def _output_shapes(entry: Entry) -> list[str]:
    return [_INDEX_COMMENT.sub("", s).strip() for s in _split(entry.root.shape[1:-1])]


def permute_outputs(entry: Entry, exp: Expected, rng: random.Random) -> None:
    outs = entry.outputs()
    if len(set(outs)) != len(outs):
        raise NotApplicable("an output returned twice")
    shapes = _output_shapes(entry)
    col = _colours(entry)
    movable = _distinct(outs, col)
    if len(movable) < 2:
        raise NotApplicable("fewer than two distinguishable outputs")
    perm = _derangement(movable[: max(2, min(len(movable), 6))], rng)
    order = sorted(range(len(outs)), key=lambda k: perm.get(k, k))
    _set_outputs(entry, [outs[k] for k in order], [shapes[k] for k in order])
    exp.outputs = {a: (None if b is None else perm.get(b, b)) for a, b in exp.outputs.items()}
    exp.added = [perm.get(j, j) for j in exp.added]


def drop_output(entry: Entry, exp: Expected, rng: random.Random) -> None:
    outs = entry.outputs()
    if len(outs) < 2 or len(set(outs)) != len(outs):
        raise NotApplicable("fewer than two outputs")
    col = _colours(entry)
    born = set(exp.added)
    # An output like no other (a twin's removal could be read as the other's) and not one just added.
    choices = [k for k in _distinct(outs, col) if k not in born]
    if not choices:
        raise NotApplicable("no distinguishable output to drop")
    k = rng.choice(choices)
    shapes = _output_shapes(entry)
    exp.dropped_shapes.add(_kind(shapes[k]))
    _set_outputs(entry, outs[:k] + outs[k + 1 :], shapes[:k] + shapes[k + 1 :])

    def shift(j: int | None) -> int | None:
        return None if j is None or j == k else (j - 1 if j > k else j)

    exp.outputs = {a: shift(b) for a, b in exp.outputs.items()}
    exp.added = [shift(j) for j in exp.added]  # type: ignore[misc]


def add_output(entry: Entry, exp: Expected, rng: random.Random) -> None:
    outs = entry.outputs()
    if len(set(outs)) != len(outs):
        raise NotApplicable("an output returned twice")
    shapes = _output_shapes(entry)
    col = _colours(entry)
    taken = {col[o] for o in outs}
    live = entry.live()
    # A value the graph computes that no output equals, of a kind unlike a dropped output's.
    pool = [
        i
        for i in entry.body
        if i.name in live
        and not i.root
        and not i.shape.startswith("(")
        and i.opcode not in ("parameter", "constant", "get-tuple-element", "tuple")
        and col[i.name] not in taken
        and _kind(i.shape) not in exp.dropped_shapes
        and "[]" not in i.shape  # a tensor, not a scalar of the step's bookkeeping
    ]
    if not pool:
        raise NotApplicable("no intermediate value to return")
    ins = rng.choice(pool)
    k = rng.randrange(len(outs) + 1)
    shape = re.sub(r"\{[^}]*\}", "", ins.shape)
    _set_outputs(entry, [*outs[:k], ins.name, *outs[k:]], [*shapes[:k], shape, *shapes[k:]])

    def shift(j: int | None) -> int | None:
        return None if j is None else (j + 1 if j >= k else j)

    exp.outputs = {a: shift(b) for a, b in exp.outputs.items()}
    exp.added = [shift(j) for j in exp.added] + [k]  # type: ignore[misc]


_FLOAT_TYPES = ("f32[]", "bf16[]", "f16[]", "f64[]")
_INT_TYPES = ("s32[]", "s64[]", "u32[]", "s8[]", "u8[]", "s16[]", "u64[]")


def change_constant(entry: Entry, exp: Expected, rng: random.Random) -> None:
    live = entry.live()
    numbers = {int(x) for i in entry.body for x in re.findall(r"\d+", i.shape)}
    kept = {exp.names[n] for n in exp.kept}  # a reordered sum's terms stay as they were
    floats, ints = [], []
    for i in entry.body:
        if i.opcode != "constant" or i.name not in live or i.name in kept:
            continue
        base = re.sub(r"\{[^}]*\}", "", i.shape)
        value = i.args.strip()
        try:
            v = float(value)
        except ValueError:
            continue
        if base in _FLOAT_TYPES and v not in (0.0, 1.0) and abs(v) < 1e30:
            floats.append(i)
        elif base in _INT_TYPES and v not in (0, 1) and int(v) not in numbers:
            ints.append(i)  # not a size: a changed size is a shape's business
    pool = floats or ints
    if not pool:
        raise NotApplicable("no live scalar constant")
    ins = rng.choice(pool)
    v = float(ins.args)
    changed = v * 2 + 0.5
    if changed == v:  # -0.5 is the map's fixed point: the "changed" constant would not change
        changed = v + 1.5
    ins.args = repr(changed) if ins in floats else str(int(v) + 3)
    exp.constant = next(a for a, b in exp.names.items() if b == ins.name)


# A size that changes everywhere it occurs stays a valid graph only where no op spells it out in
# an attribute or reshapes it away.
_SIZE_FREE = frozenset(
    {
        "parameter", "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder",
        "exponential", "log", "tanh", "negate", "abs", "sqrt", "rsqrt", "sign", "convert", "select",
        "compare", "and", "or", "xor", "not", "broadcast", "transpose", "dot", "reduce", "tuple",
        "get-tuple-element", "copy", "logistic", "exponential-minus-one", "log-plus-one", "floor",
        "ceil", "clamp", "is-finite", "cosine", "sine", "atan2", "round-nearest-even", "round-nearest-afz",
        "erf", "all-reduce", "optimization-barrier", "cbrt", "tan",
    }
)  # fmt: skip


def _dim_list(shape: str) -> list[list[int]]:
    return [
        [int(d) for d in g.split(",") if d.strip().isdigit()] for g in re.findall(r"\[([\d,\s]*)\]", shape)
    ]


def change_batch(entry: Entry, exp: Expected, rng: random.Random) -> None:
    if any("operand_layout_constraints" in i.rest for i in entry.body):
        raise NotApplicable("operand layout constraints repeat the shapes")
    ps = entry.params()
    # A batch size: the leading dimension of some input, and no other dimension of any input.
    inner = {x for p in ps.values() for d in _dim_list(p.shape) for x in d[1:]}
    sizes = sorted({d[0] for p in ps.values() for d in _dim_list(p.shape)[:1] if d and d[0] >= 2} - inner)
    rng.shuffle(sizes)
    every = {x for i in entry.body for g in _dim_list(i.shape) for x in g}
    for n in sizes:
        ok = True
        for i in entry.body:
            if n not in {x for g in _dim_list(i.shape) for x in g}:
                continue
            if i.opcode == "reshape":
                ins = entry.by_name().get(i.operands[0]) if i.operands else None
                a = sorted(x for g in _dim_list(ins.shape if ins else "") for x in g if x != 1)
                b = sorted(x for g in _dim_list(i.shape) for x in g if x != 1)
                if a != b:
                    ok = False
                    break
            elif i.opcode not in _SIZE_FREE:
                ok = False
                break
        if not ok:
            continue
        new = n + 3
        while new in every:
            new += 1

        def sub(shape: str, n: int = n, new: int = new) -> str:
            return re.sub(
                r"\[([\d,\s]*)\]",
                lambda m: (
                    "["
                    + ",".join(str(new) if d.strip() == str(n) else d for d in m.group(1).split(","))
                    + "]"
                ),
                shape,
            )

        for i in entry.body:
            old = i.shape
            i.shape = sub(i.shape)
            if i.opcode not in ("parameter", "constant"):
                i.args = sub(i.args)  # operand shapes printed in the long form
            if i.opcode == "parameter" and old != i.shape:
                a_num = next(a for a, b in exp.params.items() if b == int(i.args))
                was = exp.reshaped.get(a_num, (_dims(old), ""))[0]
                exp.reshaped[a_num] = (was, _dims(i.shape))
        return
    raise NotApplicable("no input size that changes consistently")


def _cones(entry: Entry, outs: list[str]) -> list[set[str]]:
    """Each output's instructions: itself and everything it reads, in the entry."""
    by = entry.by_name()
    cones = []
    for o in outs:
        seen: set[str] = set()
        stack = [o]
        while stack:
            n = stack.pop()
            if n in seen or n not in by:
                continue
            seen.add(n)
            stack += by[n].operands
        cones.append(seen)
    return cones


def swap_updates(entry: Entry, exp: Expected, rng: random.Random) -> None:
    """Two independent updates of different shapes run in the other order, as torch_xla lowers
    them: each output with the inputs and instructions only it reads (its state, its constants: a
    mean's divisor, a reshape's size) is an update; the two outputs trade slots, the later
    update's inputs take the first of the two updates' input numbers, and its instructions come
    first in the text."""
    outs = entry.outputs()
    if len(set(outs)) != len(outs):
        raise NotApplicable("an output returned twice")
    by = entry.by_name()
    cones = _cones(entry, outs)
    count: dict[str, int] = {}
    for cone in cones:
        for n in cone:
            count[n] = count.get(n, 0) + 1
    own = [{n for n in cone if count[n] == 1} for cone in cones]
    # Moved in the text only where nothing else reads them (dead code may): whatever an
    # instruction left in place reads stays in place too.
    users: dict[str, set[str]] = {}
    for i in entry.body:
        if not i.root:
            for o in i.operands:
                users.setdefault(o, set()).add(i.name)
    for mine in own:
        stay = [n for n in mine if not users.get(n, set()) <= mine]
        while stay:
            n = stay.pop()
            if n in mine:
                mine.discard(n)
                stay += [o for o in by[n].operands if o in mine]
    params = [sorted(int(by[n].args) for n in mine if by[n].opcode == "parameter") for mine in own]

    def shapes(k: int) -> list[str]:
        return sorted(_dims(by[n].shape) for n in own[k] if by[n].opcode != "parameter")

    # An update reads state of its own and computes something from it (not an input returned).
    updates = [k for k, o in enumerate(outs) if params[k] and by[o].opcode != "parameter"]
    pairs = [(i, j) for n, i in enumerate(updates) for j in updates[n + 1 :] if shapes(i) != shapes(j)]
    if not pairs:
        raise NotApplicable("no two independent updates of different shapes")
    first, second = rng.choice(pairs)
    slots = sorted(params[first] + params[second])
    renumber = dict(zip(params[second] + params[first], slots, strict=True))
    for k, ins in entry.params().items():
        ins.args = str(renumber.get(k, k))
    exp.params = {a: renumber.get(b, b) for a, b in exp.params.items()}
    shape_list = _output_shapes(entry)
    order = list(range(len(outs)))
    order[first], order[second] = second, first
    _set_outputs(entry, [outs[k] for k in order], [shape_list[k] for k in order])
    swap = {first: second, second: first}
    exp.outputs = {a: (None if b is None else swap.get(b, b)) for a, b in exp.outputs.items()}
    exp.added = [swap.get(j, j) for j in exp.added]
    exp.updates = (first, second)
    # The later update's instructions first, each update's in its own order, before the root:
    # nothing else reads them.
    moved = own[first] | own[second]
    body = [i for i in entry.body if i.name not in moved and not i.root]
    later = [i for i in entry.body if i.name in own[second]]
    earlier = [i for i in entry.body if i.name in own[first]]
    entry.body = [*body, *later, *earlier, entry.root]


Transform = Callable[[Entry, Expected, random.Random], None]

TRANSFORMS: dict[str, Transform] = {
    "rename": rename,
    "reorder": reorder,
    "permute_params": permute_params,
    "permute_outputs": permute_outputs,
    "drop_output": drop_output,
    "add_output": add_output,
    "constant": change_constant,
    "batch": change_batch,
}
COMBINABLE = tuple(TRANSFORMS)
# Judged alone and with each of COMBINABLE by tests/test_metamorphic_updates.py (issue 37).
UPDATE_SWAP: dict[str, Transform] = {"swap_updates": swap_updates}
# Judged alone and with a changed constant or new names by tests/test_metamorphic_terms.py.
REORDERINGS: dict[str, Transform] = dict(UPDATE_SWAP)


def apply(text: str, names: tuple[str, ...], seed: int) -> tuple[str, Expected]:
    """`text` (normalized) transformed by `names` in order, and what a diff must report."""
    entry = Entry.parse(text)
    exp = Expected.start(entry)
    rng = random.Random(seed)
    for name in names:
        (TRANSFORMS.get(name) or REORDERINGS[name])(entry, exp, rng)
    if exp.constant and exp.names[exp.constant] not in entry.live():
        raise NotApplicable("the changed constant feeds only a dropped output")
    if any(exp.outputs.get(k) is None for k in exp.updates):
        raise NotApplicable("a swapped update's output was dropped: nothing reads its inputs")
    exp.applied = names
    return entry.text(), exp
