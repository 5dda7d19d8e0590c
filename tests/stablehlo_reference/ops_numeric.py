"""Operations with an HLO instruction of their own (issue 38) as XLA's export (mhlo_to_hlo) writes
them: `fft(x), fft_type=FFT, fft_length={4}`; `rng(a, b), distribution=rng_uniform` (HLO's rng
takes its shape from the result: the shape operand is dropped); `cholesky(a), lower=true`;
`triangular-solve(a, b), left_side=true, lower=true, unit_diagonal=true, transpose_a=NO_TRANSPOSE`
(each flag printed only when true, `transpose_a` always); `batch-norm-inference(...),
epsilon=0.001, feature_index=1` (and `-training`, `-grad`); `map(a, b), dimensions={0,1},
to_apply=...`; the legacy `broadcast(x), dimensions={1,2}` (the new dimensions first). Both the
pretty form (`type = FFT, length = [4]`) and the generic one (`fft_type = #stablehlo<fft_type
FFT>, fft_length = array<i64: 4>`) are read.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.stablehlo_reference.attributes import Parsed, braces, enum, ints, one
from tests.stablehlo_reference.emit import Comp, Emitter, TranslateError, Value
from tests.stablehlo_reference.mlir_types import dims_of
from tests.stablehlo_reference.ops_regions import reducer
from tests.stablehlo_reference.structure import Op

__all__ = ["NUMERIC_HANDLERS"]


def _either(p: Parsed, a: str, b: str, default: str) -> str:
    return p.attrs.get(a, p.attrs.get(b, default))


def _fft(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    kind = enum(_either(p, "type", "fft_type", ""))
    length = ints(_either(p, "length", "fft_length", ""))
    return one(em, comp, op, p, "fft", [f"fft_type={kind}", f"fft_length={braces(length)}"])


def _rng(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    if len(p.operands) != 3:
        raise TranslateError(f"{op.name}: expected three operands (a, b, shape)", op.line)
    distribution = enum(_either(p, "distribution", "rng_distribution", "")).lower()
    operands = [em.lookup(comp, r, op.line) for r in p.operands]
    return one(em, comp, op, p, "rng", [f"distribution=rng_{distribution}"], operands[:2])


def _flag(p: Parsed, key: str) -> list[str]:
    return [f"{key}=true"] if p.attrs.get(key, "false") == "true" else []


def _cholesky(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    return one(em, comp, op, p, "cholesky", _flag(p, "lower"))


def _triangular_solve(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    flags = _flag(p, "left_side") + _flag(p, "lower") + _flag(p, "unit_diagonal")
    transpose = enum(p.attrs.get("transpose_a", "NO_TRANSPOSE"))
    return one(em, comp, op, p, "triangular-solve", [*flags, f"transpose_a={transpose}"])


def _batch_norm(opcode: str) -> Callable[[Emitter, Comp, Op, Parsed], Value]:
    def handler(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
        epsilon = format(float(p.attrs["epsilon"].split(" : ")[0]), "g")  # as XLA prints a float (%g)
        index = ints(p.attrs["feature_index"])[0]
        return one(em, comp, op, p, opcode, [f"epsilon={epsilon}", f"feature_index={index}"])

    return handler


def _map(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    dims = braces(ints(p.attrs.get("dimensions", "")))
    return one(em, comp, op, p, "map", [f"dimensions={dims}", f"to_apply={reducer(em, op, op.regions[0])}"])


def _broadcast(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    operand = em.lookup(comp, p.operands[0], op.line)
    new = len(ints(p.attrs.get("broadcast_sizes", p.attrs.get("sizes", ""))))
    dims = list(range(new, new + len(dims_of(operand.shape))))
    return one(em, comp, op, p, "broadcast", [f"dimensions={braces(dims)}"], [operand])


NUMERIC_HANDLERS: dict[str, Callable[[Emitter, Comp, Op, Parsed], Value]] = {
    "fft": _fft,
    "rng": _rng,
    "cholesky": _cholesky,
    "triangular_solve": _triangular_solve,
    "batch_norm_inference": _batch_norm("batch-norm-inference"),
    "batch_norm_training": _batch_norm("batch-norm-training"),
    "batch_norm_grad": _batch_norm("batch-norm-grad"),
    "map": _map,
    "broadcast": _broadcast,
}
