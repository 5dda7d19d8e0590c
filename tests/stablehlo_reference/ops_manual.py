"""Shardy's `sdy.manual_computation` (what `jax.shard_map` lowers to), as XLA's export writes it
(xla/service/spmd/shardy/sdy_round_trip/shard_map_export.cc): the operands pass through the custom
call `xla.sdy.GlobalToLocalShape` (a tuple of the local shapes, and its elements, for several),
the body is the computation `xla.sdy.manual_computation_body.N` of one parameter per block
argument, `call`ed (`frontend_attributes={inlineable="false"}`, its elements too), and its results
pass through `xla.sdy.LocalToGlobalShape`; the two custom calls keep the operation's shardings and
manual axes as frontend attributes. The body reads only its block arguments (MLIR's isolation: a
value from outside is not defined where it is used); a manual computation in it is one more. The
printer's pretty form is read; one of no operands or results, or with attributes of its own, is
refused by name."""

from __future__ import annotations

from tests.stablehlo_reference.attributes import Parsed
from tests.stablehlo_reference.emit import Comp, Emitter, TranslateError, Value, quote
from tests.stablehlo_reference.mlir_types import hlo_shape
from tests.stablehlo_reference.structure import Op, matching, split_top, strip_loc

__all__ = ["manual_computation"]

NAME = "sdy.manual_computation"
_INLINEABLE = 'frontend_attributes={inlineable="false"}'


def _after(op: Op, text: str, key: str, start: int, opening: str) -> tuple[str, int]:
    """The bracketed value after `key` (from `start`) and the index after it."""
    k = text.find(key, start)
    j = k + len(key)
    end = matching(text, j) if k >= 0 and text[j : j + 1] == opening else -1
    if end < 0:
        raise TranslateError(f"{NAME} without its {key.rstrip('=')} (its pretty form is read)", op.line)
    return text[j : end + 1], end + 1


def _tupled(em: Emitter, comp: Comp, value: Value, shapes: list[str], line: int) -> list[Value]:
    if len(shapes) == 1:
        return [value]
    value.elements = shapes
    return [em.element(comp, value, k, line) for k in range(len(shapes))]


def _shape(shapes: list[str]) -> str:
    return shapes[0] if len(shapes) == 1 else "(" + ", ".join(shapes) + ")"


def manual_computation(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    text = op.text.strip()
    close = matching(text, 0) if text.startswith("(") else -1
    if close < 0:
        raise TranslateError(f"{NAME} without its operands (its pretty form is read)", op.line)
    refs = split_top(text[1:close])
    in_text, k = _after(op, text, "in_shardings=", close, "[")
    out_text, k = _after(op, text, "out_shardings=", k, "[")
    axes, k = _after(op, text, "manual_axes=", k, "{")
    rest = text[k:].lstrip()
    end = matching(rest, 0) if rest.startswith("(") else -1
    if end < 0:
        raise TranslateError(f"{NAME} without its body's arguments", op.line)
    args = []
    for arg in split_top(rest[1:end]):
        name, _, type_ = strip_loc(arg)[0].partition(":")
        args.append((name.strip(), type_.strip()))
    tail = rest[end + 1 :].lstrip()
    if not tail.startswith("{}") or not tail[2:].lstrip().startswith(":"):
        raise TranslateError(f"{NAME}: attributes beside its shardings and manual axes are not read", op.line)
    for key in list(p.attrs):  # all read above, from the text
        p.attrs.get(key)
    if len(op.regions) != 1:
        raise TranslateError(f"{NAME} without its one region", op.line)
    region = op.regions[0]
    region.args = args
    if region.ops and region.ops[-1].name == "sdy.return":  # the body's terminator, as a region's
        region.ops[-1].name = "stablehlo.return"
    if not refs or not p.outs:
        raise TranslateError(f"{NAME} of no operands or no results is not read", op.line)
    if len(args) != len(refs):
        raise TranslateError(f"{NAME} has {len(refs)} operands and {len(args)} body arguments", op.line)
    ins, in_kept = em.meshes.per_value(f"#sdy.sharding_per_value<{in_text}>", op.line)
    outs, out_kept = em.meshes.per_value(f"#sdy.sharding_per_value<{out_text}>", op.line)
    if len(ins) != len(refs) or len(outs) != len(p.outs):
        raise TranslateError(
            f"{NAME} has {len(ins)} in_shardings for {len(refs)} operands, "
            f"{len(outs)} out_shardings for {len(p.outs)} results",
            op.line,
        )
    manual = quote(f"#sdy<manual_axes{axes}>")
    operands = [em.lookup(comp, r, op.line) for r in refs]
    local_in = [hlo_shape(t) for _, t in args]
    g2l = em.inst(
        comp,
        "custom-call",
        _shape(local_in),
        operands,
        [
            'custom_call_target="xla.sdy.GlobalToLocalShape"',
            "custom_call_has_side_effect=true",
            f"frontend_attributes={{xla.sdy.in_shardings={quote(in_kept)},xla.sdy.manual_axes={manual}}}",
        ],
        op.line,
        op.loc,
    )
    locals_ = _tupled(em, comp, g2l, local_in, op.line)
    body, local_out = em.computation(
        em.fresh("xla.sdy.manual_computation_body"),
        region.line,
        [[(name, shape)] for (name, _), shape in zip(args, local_in, strict=True)],
        region.ops,
    )
    if len(local_out) != len(p.outs):
        raise TranslateError(f"{NAME} returns {len(local_out)} values for {len(p.outs)} results", op.line)
    call = em.inst(
        comp, "call", _shape(local_out), locals_, [f"to_apply={body}", _INLINEABLE], op.line, op.loc
    )
    results = [call]
    if len(local_out) > 1:
        results = [
            em.inst(comp, "get-tuple-element", shape, [call], [f"index={k}", _INLINEABLE], op.line, op.loc)
            for k, shape in enumerate(local_out)
        ]
    l2g = em.inst(
        comp,
        "custom-call",
        _shape(p.outs),
        results,
        [
            'custom_call_target="xla.sdy.LocalToGlobalShape"',
            "custom_call_has_side_effect=true",
            f"frontend_attributes={{xla.sdy.manual_axes={manual},xla.sdy.out_shardings={quote(out_kept)}}}",
        ],
        op.line,
        op.loc,
    )
    if len(p.outs) > 1:
        l2g.elements = list(p.outs)
    return l2g
