"""Two runs, step by step: the first step and tensors where they stop being bit-exact (or, with
tolerances, leave them). Pure functions over `FpRun`s. Tolerance mode can only compare what a
fingerprint keeps of the values, the L2 norm: a necessary condition for closeness, not a
sufficient one (docs/divergence.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xlagraph.capture.fingerprint_format import ROLE_ORDER
from xlagraph.diverge.load import Fingerprint, FpRun, FpStep
from xlagraph.diverge.model import (
    BIT_EXACT,
    DIFFERS,
    DIVERGED,
    MISSING,
    NAN,
    SAME,
    WITHIN,
    WITHIN_TOLERANCE,
    Deviation,
    Divergence,
    GraphCheck,
    NanOnset,
    TensorDiff,
)
from xlagraph.errors import InputError

__all__ = ["STRIP_AFTER", "STRIP_BEFORE", "compare_runs", "nan_onsets", "strip", "tensor_rows"]

STRIP_BEFORE, STRIP_AFTER = 12, 36  # steps of the strip around the first divergent step

GraphsFn = Callable[[FpRun, FpRun, int | None], GraphCheck]


def compare_runs(
    a: Sequence[FpRun],
    b: Sequence[FpRun],
    rtol: float | None = None,
    atol: float | None = None,
    graphs: GraphsFn | None = None,
) -> Divergence:
    """Run A against run B (each one or more processes, paired by rank). `graphs` checks the
    journals (`xlagraph.diverge.graphs.check_graphs`); without it graphs are not compared."""
    pairs = _pairs(a, b)
    tol = rtol is not None or atol is not None
    best: tuple[int, int, FpRun, FpRun, list[TensorDiff]] | None = None
    within = False
    largest: Deviation | None = None
    inputs_first: int | None = None
    steps_compared = 0
    for ra, rb in pairs:
        n = min(len(ra.steps), len(rb.steps))
        steps_compared = max(steps_compared, n)
        for k in range(n):
            sa, sb = ra.steps[k], rb.steps[k]
            if sa.values == sb.values:
                continue
            beyond: list[TensorDiff] = []
            for d in differing(ra, sa, sb):
                if d.role == "input" and (inputs_first is None or k < inputs_first):
                    inputs_first = k
                if tol:
                    if largest is None or d.abs_dev > largest.abs:
                        largest = Deviation(k, d.name, d.abs_dev, d.rel_dev)
                    if _within(d.a, d.b, rtol or 0.0, atol or 0.0):
                        within = True
                        continue
                beyond.append(d)
            if beyond and (best is None or (k, _rank_key(ra)) < (best[0], best[1])):
                best = (k, _rank_key(ra), ra, rb, beyond)
            if best is not None and k >= best[0] and not tol and inputs_first is not None:
                break  # nothing later can change the answer
    notes = _length_notes(pairs)
    verdict = WITHIN_TOLERANCE if within else BIT_EXACT
    (ra, rb), k, rank, identical = pairs[0], None, None, None  # no step, rank or inputs to name
    first: tuple[TensorDiff, ...] = ()
    if best is not None:
        verdict, (k, _, ra, rb, beyond) = DIVERGED, best
        rank = ra.rank
        ordered = sorted(beyond, key=lambda d: (ROLE_ORDER.get(d.role, 9), _order(ra, d.name)))
        first = tuple(TensorDiff(d.name, d.role, d.step, d.a, d.b, ra.rank) for d in ordered)
        inputs = [n for n, i in ra.tensors.items() if i.role == "input"]
        sa, sb = ra.steps[k], rb.steps[k]
        present = [n for n in inputs if n in sa.values and n in sb.values]
        identical = all(sa.values[n].bits == sb.values[n].bits for n in present) if present else None
    check = graphs(ra, rb, k) if graphs else GraphCheck(None, note="graphs not compared")
    # The strip and the sources show the first pair of that rank (the first pair: ranks unrecorded).
    ra, rb = next(((x, y) for x, y in pairs if x.rank == rank), pairs[0])
    labelled = [(f"a:{x.label}" if len(pairs) > 1 else "a", x) for x, _ in pairs]
    labelled += [(f"b:{y.label}" if len(pairs) > 1 else "b", y) for _, y in pairs]
    rows = tensor_rows([ra, rb])
    return Divergence(
        verdict=verdict,
        mode="runs",
        steps_compared=steps_compared,
        first_step=k,
        first_rank=rank,
        first=first,
        graphs=check,
        inputs_identical=identical,
        inputs_first_differ=inputs_first,
        nan_onsets=nan_onsets(labelled),
        largest=largest,
        rtol=rtol,
        atol=atol,
        sources=(ra.path, rb.path),
        tensors=rows,
        strip=strip(ra, rb, rows, k, rtol, atol),
        notes=notes,
    )


def differing(run: FpRun, sa: FpStep, sb: FpStep) -> list[TensorDiff]:
    """Tensors recorded at both steps whose bits differ, in `run`'s order."""
    out = []
    for name, info in run.tensors.items():
        fa, fb = sa.values.get(name), sb.values.get(name)
        if fa is not None and fb is not None and fa.bits != fb.bits:
            out.append(TensorDiff(name, info.role, sa.index, fa, fb))
    return out


def nan_onsets(runs: Sequence[tuple[str, FpRun]]) -> tuple[NanOnset, ...]:
    """Per run and tensor, the first step with a NaN or an Inf; earliest first, roles in order."""
    out = []
    for label, run in runs:
        seen: set[str] = set()
        for step in run.steps:
            for name, fp in step.values.items():
                if (fp.nan or fp.inf) and name not in seen:
                    seen.add(name)
                    role = run.tensors[name].role if name in run.tensors else ""
                    out.append(NanOnset(label, name, role, step.index, fp.nan, fp.inf))
    return tuple(sorted(out, key=lambda o: (o.step, ROLE_ORDER.get(o.role, 9))))


def tensor_rows(runs: Sequence[FpRun]) -> tuple[tuple[str, str], ...]:
    """(name, role) of every tensor any run recorded, in role order."""
    rows: dict[str, str] = {}
    for run in runs:
        for name, info in run.tensors.items():
            rows.setdefault(name, info.role)
    return tuple(sorted(rows.items(), key=lambda kv: ROLE_ORDER.get(kv[1], 9)))


def strip(
    a: FpRun,
    b: FpRun,
    rows: Sequence[tuple[str, str]],
    first: int | None,
    rtol: float | None,
    atol: float | None,
) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """The cells of the HTML strip: a window of steps around the first divergent one."""
    n = min(len(a.steps), len(b.steps))
    start = max(0, (first or 0) - STRIP_BEFORE)
    stop = min(n, start + STRIP_BEFORE + STRIP_AFTER)
    tol = rtol is not None or atol is not None
    out = []
    for k in range(start, stop):
        sa, sb = a.steps[k], b.steps[k]
        out.append(
            (
                sa.index,
                tuple(_cell(sa.values.get(name), sb.values.get(name), tol, rtol, atol) for name, _ in rows),
            )
        )
    return tuple(out)


def _cell(
    fa: Fingerprint | None, fb: Fingerprint | None, tol: bool, rtol: float | None, atol: float | None
) -> str:
    if fa is None or fb is None:
        return MISSING
    bad = fa.nan or fa.inf or fb.nan or fb.inf
    if fa.bits == fb.bits:
        return NAN if bad else SAME
    if bad:
        return NAN
    if tol and _within(fa, fb, rtol or 0.0, atol or 0.0):
        return WITHIN
    return DIFFERS


def _within(a: Fingerprint, b: Fingerprint, rtol: float, atol: float) -> bool:
    if (a.nan, a.inf) != (b.nan, b.inf):
        return False
    return abs(a.norm - b.norm) <= atol + rtol * abs(a.norm)


def _pairs(a: Sequence[FpRun], b: Sequence[FpRun]) -> list[tuple[FpRun, FpRun]]:
    if len(a) != len(b):
        raise InputError(
            b[0].path, f"{len(b)} process(es) with fingerprints here, {len(a)} in the other capture"
        )
    ranks_a, ranks_b = [r.rank for r in a], [r.rank for r in b]
    if None not in ranks_a and sorted(ranks_a) == sorted(ranks_b):
        by_rank = {r.rank: r for r in b}
        return [(r, by_rank[r.rank]) for r in a]
    return list(zip(a, b, strict=True))


def _rank_key(run: FpRun) -> int:
    return run.rank if run.rank is not None else -1


def _order(run: FpRun, name: str) -> int:
    for i, n in enumerate(run.tensors):
        if n == name:
            return i
    return len(run.tensors)


def _length_notes(pairs: Sequence[tuple[FpRun, FpRun]]) -> tuple[str, ...]:
    notes = []
    for ra, rb in pairs:
        if len(ra.steps) != len(rb.steps):
            n = min(len(ra.steps), len(rb.steps))
            notes.append(
                f"{ra.label}: {len(ra.steps)} steps, {rb.label}: {len(rb.steps)}; the first {n} compared"
            )
        notes += [f"{ra.label}: {x}" for x in ra.notes] + [f"{rb.label}: {x}" for x in rb.notes]
    return tuple(notes)
