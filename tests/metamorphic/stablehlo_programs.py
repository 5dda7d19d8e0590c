"""Real JAX programs, lowered once to StableHLO and to HLO, and changed at the PROGRAM level so
that one change reaches both formats from one lowering (issue 38).

A `Program` is a small straight-line function over a grammar of `jax.numpy`/`lax` operations
(elementwise, matmul, reductions, reshape, transpose, slicing, concatenation, `where`, explicit
broadcasts, conversions, and now and then `fori_loop`, `cond` and `scan`), with several inputs
and outputs of different shapes and Python constants. `generate(seed)` makes one, deterministically;
`lower(program)` runs `jax.jit(f).lower(...)` on it and returns `lowered.as_text()` and
`lowered.as_text(dialect="hlo")`: the StableHLO JAX writes and the HLO XLA's export writes for
that same lowering.

The transformations (`TRANSFORMS`) edit the program and record in transforms.py's `Expected` what
a correct diff of the two lowerings must say, exactly as the text-level ones do: the function's
inputs permuted, its outputs permuted, one dropped or one intermediate value added, one Python
constant changed, the batch size changed, the statements traced in another order. Which inputs or
outputs are told apart (and so may be permuted) is read from the HLO of the current program with
transforms.py's own colours, never from xlagraph.
"""

from __future__ import annotations

import atexit
import multiprocessing
import random
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from tests.metamorphic.transforms import (
    Entry,
    Expected,
    NotApplicable,
    _colours,
    _derangement,
    _distinct,
    _kind,
    normalize,
)

__all__ = ["TRANSFORMS", "Program", "apply", "generate", "lower", "start"]

Dim = int | str  # "B": the batch size, the one size `batch` changes
Shape = tuple[Dim, ...]

_SIZES = (2, 3, 6, 8, 12)
_SPLITS = {6: (2, 3), 8: (2, 4), 12: (3, 4)}
_UNARY_F = ("tanh", "exp", "sin", "negative", "abs", "sqrt_abs", "log1p_abs", "sigmoid")
_UNARY_I = ("negative", "abs")
_BINARY = ("add", "subtract", "multiply", "maximum", "minimum")
# Statements with a Python constant that `constant` may change.
_WITH_CONSTANT = ("scale", "shift", "where", "fori", "cond", "scan_carry", "scan_ys")


@dataclass(frozen=True)
class Stmt:
    kind: str
    args: tuple[int, ...]  # value ids: inputs first, then statements
    params: tuple[Any, ...] = ()
    const: float | int | None = None


@dataclass(frozen=True)
class Program:
    """Values 0..len(inputs)-1 are the inputs, value len(inputs)+k is statement k."""

    inputs: tuple[tuple[Shape, str], ...]
    stmts: tuple[Stmt, ...]
    outputs: tuple[int, ...]  # value ids, in the function's output order
    order: tuple[int, ...]  # argument position -> input id
    trace: tuple[int, ...]  # the order the statements run in (a topological order)
    batch: int
    seed: int
    sizes: frozenset[int]  # every size but the batch's some value of the program has

    def shapes(self) -> list[tuple[int, ...]]:
        """Each input's concrete shape, in argument order."""
        return [tuple(self.batch if d == "B" else d for d in self.inputs[i][0]) for i in self.order]


# ---------------------------------------------------------------------------------------------
# The grammar: which statements fit which values, by symbolic shape and dtype.


def _fits_suffix(small: Shape, big: Shape) -> bool:
    return len(small) <= len(big) and tuple(big[len(big) - len(small) :]) == tuple(small)


# The constants the programs hold besides the ones `_fresh` gives: loop bounds and steps, `cond`'s
# other branch, reductions' and `scan`'s initial values, and the batch sizes (a scan's trip count).
_FIXED = frozenset({0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 8.0, 10.0})


@dataclass
class _State:
    """What the statements drawn so far hold: how often each value is read, the constants, and
    the kind of statement that made each value."""

    used: dict[int, int]
    consts: set[float | int]
    made: dict[int, str]


def _fresh(rng: random.Random, kind: type, st: _State) -> float | int:
    """A constant unlike every other in the program: XLA's export shares equal constants, so a
    value met twice would be one constant in the HLO and two in the StableHLO, and changing one
    of them would change the HLO's structure (found by this test: `x + 3.5` changed to 7.5 beside
    `where(x > 7.5, ...)`)."""
    while True:
        if kind is int:
            v: float | int = rng.randrange(11, 100)  # no size: sizes are at most 36, batches 11
        else:
            v = round(rng.choice((0.25, 0.75, 1.25, 1.5, 2.5, 3.5, 4.5)) + rng.randrange(0, 4), 2)
        if v not in st.consts and float(v) not in _FIXED:
            st.consts.add(v)
            return v


def _try(
    kind: str, vals: list[tuple[Shape, str]], rng: random.Random, st: _State
) -> tuple[Stmt, tuple[Shape, str]] | None:
    """A statement of `kind` over some of `vals`, with its result's shape, or None."""
    ids = list(range(len(vals)))
    rng.shuffle(ids)
    # Prefer the values nothing reads yet (the inputs first), so that every input is used.
    ids.sort(key=lambda i: st.used.get(i, 0))
    floats = [i for i in ids if vals[i][1] in ("f32", "bf16")]
    if kind == "unary":
        i = ids[0]
        names = _UNARY_F if vals[i][1] != "i32" else _UNARY_I
        return Stmt(kind, (i,), (rng.choice(names),)), vals[i]
    if kind in ("scale", "shift"):
        i = ids[0]
        if vals[i][1] == "i32":
            return Stmt(kind, (i,), (), _fresh(rng, int, st)), vals[i]
        return Stmt(kind, (i,), (), _fresh(rng, float, st)), vals[i]
    if kind == "binary":
        for i in ids:
            for j in ids:
                if i != j and vals[i][1] == vals[j][1] and _fits_suffix(vals[j][0], vals[i][0]):
                    return Stmt(kind, (i, j), (rng.choice(_BINARY),)), vals[i]
        return None
    if kind == "matmul":
        for i in floats:
            for j in floats:
                a, b = vals[i][0], vals[j][0]
                if (
                    i != j
                    and vals[i][1] == vals[j][1]
                    and a
                    and len(b) == 2
                    and "B" not in b
                    and a[-1] == b[0]
                ):
                    return Stmt(kind, (i, j)), ((*a[:-1], b[1]), vals[i][1])
        return None
    if kind == "reduce":
        for i in ids:
            s = vals[i][0]
            if len(s) >= 2:
                ax = rng.randrange(len(s))
                op = rng.choice(("sum", "max", "min"))
                return Stmt(kind, (i,), (op, ax)), (s[:ax] + s[ax + 1 :], vals[i][1])
        return None
    if kind == "transpose":
        for i in ids:
            s = vals[i][0]
            if len(s) >= 2 and st.made.get(i) != "transpose":
                perm = list(range(len(s)))
                while perm == sorted(perm):
                    rng.shuffle(perm)
                return Stmt(kind, (i,), tuple(perm)), (tuple(s[p] for p in perm), vals[i][1])
        return None
    if kind == "reshape":
        for i in ids:
            s = vals[i][0]
            if st.made.get(i) == "reshape":
                continue
            ax = [k for k, d in enumerate(s) if d in _SPLITS]
            if ax and len(s) <= 2:
                k = rng.choice(ax)
                a, b = _SPLITS[s[k]]  # type: ignore[index]
                return Stmt(kind, (i,), ("split", k, a, b)), ((*s[:k], a, b, *s[k + 1 :]), vals[i][1])
            if len(s) == 3 and "B" not in s[1:]:
                return Stmt(kind, (i,), ("merge",)), ((s[0], s[1] * s[2]), vals[i][1])  # type: ignore[operator]
        return None
    if kind == "slice":
        for i in ids:
            s = vals[i][0]
            if st.made.get(i) == "concat":
                continue
            ax = [k for k, d in enumerate(s) if d != "B" and d >= 3]  # type: ignore[operator]
            if ax:
                k = rng.choice(ax)
                lo = rng.randrange(0, s[k] - 1)  # type: ignore[operator]
                hi = rng.randrange(lo + 1, s[k] + 1)  # type: ignore[operator]
                if hi - lo == s[k]:
                    hi -= 1
                return Stmt(kind, (i,), (k, lo, hi)), ((*s[:k], hi - lo, *s[k + 1 :]), vals[i][1])
        return None
    if kind == "concat":
        for i in ids:
            for j in ids:
                a, b = vals[i][0], vals[j][0]
                if vals[i][1] != vals[j][1] or len(a) != len(b) or not a:
                    continue
                axes = [
                    k for k in range(len(a))
                    if a[k] != "B" and b[k] != "B" and all(a[m] == b[m] for m in range(len(a)) if m != k)
                ]  # fmt: skip
                if axes:
                    k = rng.choice(axes)
                    return Stmt(kind, (i, j), (k,)), ((*a[:k], a[k] + b[k], *a[k + 1 :]), vals[i][1])  # type: ignore[operator]
        return None
    if kind == "where":
        for i in floats:
            for j in floats:
                if i != j and vals[i] == vals[j]:
                    return Stmt(kind, (i, j), (), _fresh(rng, float, st)), vals[i]
        return None
    if kind == "broadcast":
        for i in ids:
            for j in ids:
                a, b = vals[i][0], vals[j][0]
                if i != j and len(a) < len(b) and _fits_suffix(a, b):
                    return Stmt(kind, (i, j)), (b, vals[i][1])
        return None
    if kind == "astype":
        i = ids[0]
        to = {"f32": "bf16", "bf16": "f32", "i32": "f32"}[vals[i][1]]
        return Stmt(kind, (i,), (to,)), (vals[i][0], to)
    if kind in ("fori", "cond"):
        for i in floats:
            if vals[i][0]:
                n = rng.randrange(2, 5)
                return Stmt(kind, (i,), (n, rng.choice(_UNARY_F)), _fresh(rng, float, st)), vals[i]
        return None
    if kind in ("scan_carry", "scan_ys"):
        for i in floats:
            s = vals[i][0]
            if len(s) == 2 and s[0] == "B":
                out = (s[1],) if kind == "scan_carry" else ("B",)
                return Stmt(kind, (i,), (), _fresh(rng, float, st)), (out, vals[i][1])
        return None
    raise ValueError(kind)


# What XLA's export folds is kept out of the grammar, since a diff of the HLO then sees another
# program than the StableHLO's (the export, with the StableHLO simplifications JAX runs first,
# cancels a transpose of a transpose, merges a reshape of a reshape and reads a slice of a
# concatenation from the operand it falls in; found by this test: `x.T.T` returned as an added
# output where A returned only `-(x.T.T)` read in HLO as a changed program, `structure`, and in
# StableHLO as `output_removed` + `output_added`). So `transpose` never reads a transpose,
# `reshape` never a reshape, `slice` never a concatenation.
_KINDS = (
    ("unary", 5), ("scale", 4), ("shift", 3), ("binary", 6), ("matmul", 4), ("reduce", 3),
    ("transpose", 2), ("reshape", 2), ("slice", 2), ("concat", 2), ("where", 2), ("broadcast", 1),
    ("astype", 1), ("fori", 1), ("cond", 1), ("scan_carry", 1), ("scan_ys", 1),
)  # fmt: skip


def _input_shapes(rng: random.Random) -> list[tuple[Shape, str]]:
    d = rng.choice(_SIZES)
    out: list[tuple[Shape, str]] = [(("B", d), "f32")]
    for _ in range(rng.randrange(1, 4)):
        e, f = rng.choice(_SIZES), rng.choice(_SIZES)
        out.append(
            rng.choice(
                [(("B", d), "f32"), ((d, e), "f32"), ((e,), "f32"), (("B", e, f), "f32"), (("B", e), "i32"),
                 ((d,), "f32"), (("B", d), "bf16")]
            )
        )  # fmt: skip
    return out


def generate(seed: int) -> Program:
    """A program every input of which reaches an output; deterministic in `seed`."""
    for attempt in range(100):
        rng = random.Random(seed * 1000 + attempt)
        inputs = _input_shapes(rng)
        vals = list(inputs)
        stmts: list[Stmt] = []
        st = _State({}, set(), {})
        kinds, weights = zip(*_KINDS, strict=True)
        for _ in range(rng.randrange(4, 11)):
            for _tries in range(20):
                got = _try(rng.choices(kinds, weights)[0], vals, rng, st)
                if got is not None:
                    break
            else:
                continue
            stmt, val = got
            for a in stmt.args:
                st.used[a] = st.used.get(a, 0) + 1
            st.made[len(vals)] = stmt.kind
            stmts.append(stmt)
            vals.append(val)
        n = len(inputs)
        read = {a for s in stmts for a in s.args}
        sinks = [n + k for k in range(len(stmts)) if n + k not in read]
        extra = [n + k for k in range(len(stmts)) if n + k in read and rng.random() < 0.15]
        outputs = (sinks + extra)[:4]
        rng.shuffle(outputs)
        live = _cone(stmts, n, outputs, data=False)
        if not outputs or not set(range(n)) <= _cone(stmts, n, outputs):
            continue
        # Only the statements some output reads: a dead one is nobody's business here.
        keep = sorted(v - n for v in live if v >= n)
        renum = {v: v for v in range(n)} | {n + old: n + new for new, old in enumerate(keep)}
        sizes = frozenset(d for shape, _ in vals for d in shape if isinstance(d, int))
        batch = next((b for b in (4, 5, 7, 9, 11) if b not in sizes), None)
        if batch is None:
            continue
        stmts = [replace(stmts[k], args=tuple(renum[a] for a in stmts[k].args)) for k in keep]
        p = Program(
            tuple(inputs), tuple(stmts), tuple(renum[o] for o in outputs), tuple(range(n)),
            tuple(range(len(stmts))), batch, seed, sizes,
        )  # fmt: skip
        if not _interchangeable_inputs(p):
            return p
    raise RuntimeError(f"no program for seed {seed}")


_COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum"})


def _interchangeable_inputs(p: Program) -> bool:
    """Two inputs of one type that can trade places without changing what the outputs compute,
    in some order (`min(x, y)` of two inputs read nowhere else; `f(x)` and `f(y)` both returned,
    where swapping the inputs is swapping the outputs). Such programs are left out: which input
    is which has no single right answer, and the engine pairs them either way, not always alike
    on the two formats' texts (found by this test on a constant change: the HLO diff named a
    permutation 0<->2 of `minimum(x, z)`'s inputs, the StableHLO diff none). test_metamorphic's
    AMBIGUOUS is the same class."""
    n = len(p.inputs)

    def values(label: dict[int, int]) -> tuple[int, ...]:
        h: dict[int, int] = {v: hash(("in", label.get(v, v))) for v in range(n)}
        for k, s in enumerate(p.stmts):
            ops = [h[a] for a in s.args]
            if s.kind == "binary" and s.params[0] in _COMMUTATIVE:
                ops.sort()
            h[n + k] = hash((s.kind, s.params, s.const, tuple(ops)))
        return tuple(h[o] for o in p.outputs)

    base = sorted(values({}))
    return any(
        sorted(values({i: j, j: i})) == base
        for i in range(n) for j in range(i + 1, n) if p.inputs[i] == p.inputs[j]
    )  # fmt: skip


def _cone(
    stmts: list[Stmt] | tuple[Stmt, ...], n: int, outputs: list[int] | tuple[int, ...], data: bool = True
) -> set[int]:
    """The values the outputs read (`data`: their data; else their shapes too)."""
    seen: set[int] = set()
    stack = list(outputs)
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v >= n:
            s = stmts[v - n]
            # `broadcast` reads only the shape of its second value: no data flows from it.
            stack += s.args[:1] if s.kind == "broadcast" and data else s.args
    return seen


# ---------------------------------------------------------------------------------------------
# The program as a Python function, and its lowering.


def _function(p: Program) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    unary = {
        "tanh": jnp.tanh, "exp": jnp.exp, "sin": jnp.sin, "negative": jnp.negative, "abs": jnp.abs,
        "sqrt_abs": lambda x: jnp.sqrt(jnp.abs(x)), "log1p_abs": lambda x: jnp.log1p(jnp.abs(x)),
        "sigmoid": jax.nn.sigmoid,
    }  # fmt: skip
    binary = {"add": jnp.add, "subtract": jnp.subtract, "multiply": jnp.multiply,
              "maximum": jnp.maximum, "minimum": jnp.minimum}  # fmt: skip
    dtypes = {"f32": jnp.float32, "bf16": jnp.bfloat16, "i32": jnp.int32}
    n = len(p.inputs)

    def run(s: Stmt, x: Any, y: Any) -> Any:
        k, c = s.kind, s.const
        if k == "unary":
            return unary[s.params[0]](x)
        if k == "scale":
            return x * c
        if k == "shift":
            return x + c
        if k == "binary":
            return binary[s.params[0]](x, y)
        if k == "matmul":
            return x @ y
        if k == "reduce":
            op, ax = s.params
            return {"sum": jnp.sum, "max": jnp.max, "min": jnp.min}[op](x, axis=ax)
        if k == "transpose":
            return jnp.transpose(x, s.params)
        if k == "reshape":
            if s.params[0] == "split":
                _, ax, a, b = s.params
                return x.reshape(*x.shape[:ax], a, b, *x.shape[ax + 1 :])
            return x.reshape(x.shape[0], x.shape[1] * x.shape[2])
        if k == "slice":
            ax, lo, hi = s.params
            return lax.slice_in_dim(x, lo, hi, axis=ax)
        if k == "concat":
            return jnp.concatenate([x, y], axis=s.params[0])
        if k == "where":
            return jnp.where(x > c, x, y)
        if k == "broadcast":
            return jnp.broadcast_to(x, y.shape)
        if k == "astype":
            return x.astype(dtypes[s.params[0]])
        if k == "fori":
            return lax.fori_loop(0, s.params[0], lambda i, v: v * c + 0.5, x)
        if k == "cond":
            return lax.cond(x.sum() > c, unary[s.params[1]], lambda v: v * 3.0, x)
        if k in ("scan_carry", "scan_ys"):

            def step(carry: Any, row: Any) -> tuple[Any, Any]:
                carry = carry * c + row
                return carry, carry.sum()

            carry, ys = lax.scan(step, jnp.zeros(x.shape[1:], x.dtype), x)
            return carry if k == "scan_carry" else ys
        raise ValueError(k)

    def f(*args: Any) -> tuple[Any, ...]:
        env = {p.order[j]: a for j, a in enumerate(args)}
        for k in p.trace:
            s = p.stmts[k]
            xs = [env[a] for a in s.args] + [None]
            env[n + k] = run(s, xs[0], xs[1])
        return tuple(env[o] for o in p.outputs)

    return f


_LOWERING: ProcessPoolExecutor | None = None


@cache
def lower(p: Program) -> tuple[str, str]:
    """(StableHLO, HLO) of one `jax.jit(f).lower(...)` of the program, made in a child process:
    JAX starts threads, and the tests that run after these fork (the report's workers), which a
    process with other threads must not (JAX warns that it can deadlock)."""
    global _LOWERING
    if _LOWERING is None:
        _LOWERING = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        atexit.register(_LOWERING.shutdown)
    return _LOWERING.submit(_lower_here, p).result()


def _lower_here(p: Program) -> tuple[str, str]:
    import jax
    import jax.numpy as jnp

    dtypes = {"f32": jnp.float32, "bf16": jnp.bfloat16, "i32": jnp.int32}
    specs = [
        jax.ShapeDtypeStruct(shape, dtypes[p.inputs[i][1]])
        for i, shape in zip(p.order, p.shapes(), strict=True)
    ]
    # keep_unused: an input only a dropped output read stays an input (none is, by construction).
    lowered = jax.jit(_function(p), keep_unused=True).lower(*specs)
    return lowered.as_text(), lowered.as_text(dialect="hlo")


@cache
def _entry(p: Program) -> Entry:
    return Entry.parse(normalize(lower(p)[1]))


def _colour_of_inputs(p: Program) -> tuple[list[int], dict[str, int], Entry]:
    entry = _entry(p)
    return sorted(entry.params()), _colours(entry), entry


# ---------------------------------------------------------------------------------------------
# The transformations: each returns the changed program and updates `exp` (A's side -> B's).


def start(p: Program) -> Expected:
    return Expected.start(_entry(p))


def permute_inputs(p: Program, exp: Expected, rng: random.Random) -> Program:
    numbers, col, entry = _colour_of_inputs(p)
    ps = entry.params()
    movable = [numbers[k] for k in _distinct([ps[n].name for n in numbers], col)]
    if len(movable) < 2:
        raise NotApplicable("fewer than two distinguishable inputs")
    perm = _derangement(movable[: max(2, min(len(movable), 6))], rng)
    order = list(p.order)
    for pos, new in perm.items():
        order[new] = p.order[pos]
    exp.params = {a: perm.get(b, b) for a, b in exp.params.items()}
    return replace(p, order=tuple(order))


def _outputs(p: Program) -> list[str]:
    if len(p.outputs) < 2:
        raise NotApplicable("one output")
    return _entry(p).outputs()


def permute_outputs(p: Program, exp: Expected, rng: random.Random) -> Program:
    outs = _outputs(p)
    movable = _distinct(outs, _colours(_entry(p)))
    if len(movable) < 2:
        raise NotApplicable("fewer than two distinguishable outputs")
    perm = _derangement(movable[: max(2, min(len(movable), 6))], rng)
    order = sorted(range(len(outs)), key=lambda k: perm.get(k, k))
    exp.outputs = {a: (None if b is None else perm.get(b, b)) for a, b in exp.outputs.items()}
    exp.added = [perm.get(j, j) for j in exp.added]
    return replace(p, outputs=tuple(p.outputs[k] for k in order))


def drop_output(p: Program, exp: Expected, rng: random.Random) -> Program:
    outs = _outputs(p)
    n = len(p.inputs)
    born = set(exp.added)
    choices = [
        k for k in _distinct(outs, _colours(_entry(p)))
        if k not in born and set(range(n)) <= _cone(p.stmts, n, p.outputs[:k] + p.outputs[k + 1 :])
    ]  # fmt: skip
    if not choices:
        raise NotApplicable("no distinguishable output to drop that leaves every input read")
    k = rng.choice(choices)
    exp.dropped_shapes.add(_kind(_out_shape(p, k)))

    def shift(j: int | None) -> int | None:
        return None if j is None or j == k else (j - 1 if j > k else j)

    exp.outputs = {a: shift(b) for a, b in exp.outputs.items()}
    exp.added = [shift(j) for j in exp.added]  # type: ignore[misc]
    return replace(p, outputs=p.outputs[:k] + p.outputs[k + 1 :])


def _out_shape(p: Program, k: int) -> str:
    from tests.metamorphic.transforms import _output_shapes

    entry = _entry(p)
    return _output_shapes(entry)[k] if len(p.outputs) > 1 else entry.root.shape


def add_output(p: Program, exp: Expected, rng: random.Random) -> Program:
    from tests.metamorphic.check import output_values

    n = len(p.inputs)
    if len(p.stmts) < 2:
        raise NotApplicable("no intermediate value")
    # Every statement returned, to read each one's shape and value from the HLO.
    every = replace(p, outputs=tuple(range(n, n + len(p.stmts))))
    values = output_values(normalize(lower(every)[1]))
    taken = {values[o - n] for o in p.outputs}
    # A value no output equals (else the new output is an old one's twin), not a scalar, of a
    # kind unlike a dropped output's (else it may rightly read as that one resized).
    pool = [
        v for v in range(n, n + len(p.stmts))
        if v not in p.outputs and values[v - n] not in taken and values.count(values[v - n]) == 1
        and "[]" not in _out_shape(every, v - n) and _kind(_out_shape(every, v - n)) not in exp.dropped_shapes
    ]  # fmt: skip
    if not pool:
        raise NotApplicable("no intermediate value to return")
    v = rng.choice(pool)
    k = rng.randrange(len(p.outputs) + 1)

    def shift(j: int | None) -> int | None:
        return None if j is None else (j + 1 if j >= k else j)

    exp.outputs = {a: shift(b) for a, b in exp.outputs.items()}
    exp.added = [shift(j) for j in exp.added] + [k]  # type: ignore[misc]
    return replace(p, outputs=(*p.outputs[:k], v, *p.outputs[k:]))


def change_constant(p: Program, exp: Expected, rng: random.Random) -> Program:
    pool = [k for k, s in enumerate(p.stmts) if s.kind in _WITH_CONSTANT]
    if not pool:
        raise NotApplicable("no Python constant")
    k = rng.choice(pool)
    s = p.stmts[k]
    # Nor any whole number a size or a loop's trip count could be (a batch changed with it
    # included): the constant is found in each format by its value.
    taken = {t.const for t in p.stmts} | _FIXED | set(range(64))
    new = s.const + 3 if isinstance(s.const, int) else s.const * 2 + 0.5  # type: ignore[operator]
    while new in taken:  # unlike every other constant (see `_fresh`)
        new += 1
    # Which statement, and the values: each format's names for the constant are found by them.
    exp.constant = f"{k}|{s.const}->{new}"
    stmts = list(p.stmts)
    stmts[k] = replace(s, const=new)
    return replace(p, stmts=tuple(stmts))


def change_batch(p: Program, exp: Expected, rng: random.Random) -> Program:
    # A batch size no other size equals, before or after: XLA's export shares equal constants, and
    # two zero-filled buffers of equal shape (a scan's carry and its outputs) are one constant
    # broadcast in the HLO where the sizes meet, two where they do not (found by this test).
    new = p.batch + 3
    while new in p.sizes:
        new += 1
    q = replace(p, batch=new)
    for pos, (a, b) in enumerate(zip(p.shapes(), q.shapes(), strict=True)):
        if a != b:
            dt = p.inputs[p.order[pos]][1].replace("i32", "s32")
            a_num = next(x for x, y in exp.params.items() if y == pos)
            was = exp.reshaped.get(a_num, (f"{dt}[{','.join(map(str, a))}]", ""))[0]
            exp.reshaped[a_num] = (was, f"{dt}[{','.join(map(str, b))}]")
    return q


def reorder(p: Program, exp: Expected, rng: random.Random) -> Program:
    """Another topological order of the statements: JAX traces them in that order."""
    n = len(p.inputs)
    deps = {k: {a - n for a in s.args if a >= n} for k, s in enumerate(p.stmts)}
    done: list[int] = []
    for _ in range(8):  # a few tries for an order unlike the current one
        done = []
        ready = sorted(k for k, d in deps.items() if not d)
        while ready:
            k = ready.pop(rng.randrange(len(ready)))
            done.append(k)
            ready += [
                u for u, d in deps.items() if k in d and u not in done and d <= set(done) and u not in ready
            ]
        if tuple(done) != p.trace:
            break
    else:
        raise NotApplicable("one order only")
    return replace(p, trace=tuple(done))


Transform = Callable[[Program, Expected, random.Random], Program]
TRANSFORMS: dict[str, Transform] = {
    "reorder": reorder,
    "permute_params": permute_inputs,
    "permute_outputs": permute_outputs,
    "drop_output": drop_output,
    "add_output": add_output,
    "constant": change_constant,
    "batch": change_batch,
}


def apply(p: Program, names: tuple[str, ...], seed: int) -> tuple[Program, Expected]:
    exp = start(p)
    rng = random.Random(seed)
    for name in names:
        p = TRANSFORMS[name](p, exp, rng)
    if exp.constant:
        k = int(exp.constant.split("|")[0])
        if len(p.inputs) + k not in _cone(p.stmts, len(p.inputs), p.outputs):
            raise NotApplicable("the changed constant feeds only a dropped output")
    if _interchangeable_inputs(p):  # dropping an output can make two inputs twins
        raise NotApplicable("two inputs interchangeable after the change")
    exp.applied = names
    return p, exp
