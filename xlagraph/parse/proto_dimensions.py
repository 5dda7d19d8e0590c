"""The attributes of the instructions that compute over dimensions they name, from an
`HloInstructionProto`: dot and convolution (dimension numbers, window, dim_labels, precision),
gather and scatter (their dimension numbers), and a custom call (which prints a convolution's
where it carries them, then its target, layouts, literal and aliasing); in XLA's order.
"""

from __future__ import annotations

from collections.abc import Callable

from xlagraph.parse import proto_literals as lit
from xlagraph.parse.proto_text import aliasing_text, dim_labels, ints_text, quoted, shape_text, window_text
from xlagraph.parse.proto_wire import Message

__all__ = ["GATHER", "SCATTER", "Take", "conv", "custom_call", "dimension_numbers", "dot", "window"]

Take = Callable[..., None]  # marks proto fields as printed
_TUPLE = 13

_PRECISION = {0: "default", 1: "high", 2: "highest"}
_ALGORITHMS = {
    1: "dot_any_f8_any_f8_f32",
    2: "dot_any_f8_any_f8_f32_fast_accum",
    3: "dot_f16_f16_f16",
    4: "dot_f16_f16_f32",
    5: "dot_bf16_bf16_bf16",
    6: "dot_bf16_bf16_f32",
    7: "dot_bf16_bf16_f32_x3",
    8: "dot_bf16_bf16_f32_x6",
    9: "dot_tf32_tf32_f32",
    10: "dot_tf32_tf32_f32_x3",
    11: "dot_f32_f32_f32",
    12: "dot_f64_f64_f64",
    13: "dot_bf16_bf16_f32_x9",
}
_API = {
    2: "API_VERSION_STATUS_RETURNING",
    3: "API_VERSION_STATUS_RETURNING_UNIFIED",
    4: "API_VERSION_TYPED_FFI",
}
_SCHEDULE = {1: "SCHEDULE_LATEST", 2: "SCHEDULE_EARLIEST"}

# Gather's and scatter's dimension numbers (fields 1-3 always printed, the batching ones when
# set), then index_vector_dim (field 4).
GATHER = (
    ("offset_dims", 1),
    ("collapsed_slice_dims", 2),
    ("start_index_map", 3),
    ("operand_batching_dims", 5),
    ("start_indices_batching_dims", 6),
)
SCATTER = (
    ("update_window_dims", 1),
    ("inserted_window_dims", 2),
    ("scatter_dims_to_operand_dims", 3),
    ("input_batching_dims", 5),
    ("scatter_indices_batching_dims", 6),
)


def dimension_numbers(numbers: Message | None, keys: tuple[tuple[str, int], ...], attrs: list[str]) -> None:
    numbers = numbers or Message(b"")
    for key, field in keys:
        values = numbers.ints(field)
        if values or field <= 3:
            attrs.append(f"{key}={ints_text(values)}")
    attrs.append(f"index_vector_dim={numbers.int(4)}")


def dot(ins: Message, attrs: list[str], take: Take) -> None:
    d = ins.message(30) or Message(b"")
    if d.ints(3):
        attrs.append("lhs_batch_dims=" + ints_text(d.ints(3)))
    attrs.append("lhs_contracting_dims=" + ints_text(d.ints(1)))
    if d.ints(4):
        attrs.append("rhs_batch_dims=" + ints_text(d.ints(4)))
    attrs.append("rhs_contracting_dims=" + ints_text(d.ints(2)))
    _precision(ins, attrs)
    take(30, 51)


def _precision(ins: Message, attrs: list[str]) -> None:
    p = ins.message(51)
    if p is None:
        return
    ops = p.ints(1)
    if any(ops):
        attrs.append("operand_precision={" + ",".join(_PRECISION.get(o, str(o)) for o in ops) + "}")
    if p.int(2):
        attrs.append(f"algorithm={_ALGORITHMS.get(p.int(2), p.int(2))}")


def conv(ins: Message, shape: Message | None, attrs: list[str]) -> None:
    """A convolution's window, dim_labels, group counts and precision: a custom call prints
    them too where it carries them."""
    window(ins, attrs)
    c = ins.message(16)
    if c is not None:
        rank = len(shape.ints(3)) if shape is not None else 0
        attrs.append("dim_labels=" + dim_labels(c, rank))
    if ins.int(50, 1) != 1:
        attrs.append(f"feature_group_count={ins.int(50, 1)}")
    if ins.int(58, 1) != 1:
        attrs.append(f"batch_group_count={ins.int(58, 1)}")
    _precision(ins, attrs)


def window(ins: Message, attrs: list[str]) -> None:
    if ins.has(15) and ins.message(15).has(1):
        attrs.append("window=" + window_text(ins.message(15)))


def custom_call(ins: Message, shape: Message | None, attrs: list[str], take: Take) -> None:
    conv(ins, shape, attrs)
    attrs.append(f"custom_call_target={quoted(ins.string(28))}")
    if ins.bool(56):
        attrs.append(
            "operand_layout_constraints={" + ", ".join(shape_text(s) for s in ins.messages(57)) + "}"
        )
    if ins.bool(65):
        attrs.append("custom_call_has_side_effect=true")
    literal = ins.message(8)
    if literal is not None:
        shaped = literal.message(1) is not None and literal.message(1).int(2) == _TUPLE
        text = (
            lit.literal_text(literal, shape_text)
            if shaped
            else f"{shape_text(literal.message(1))} {lit.literal_text(literal)}"
        )
        attrs.append("literal=" + text)
    aliasing = ins.messages(74)
    if aliasing:
        attrs.append("output_to_operand_aliasing=" + aliasing_text(aliasing))
    if ins.int(76):
        attrs.append(f"schedule={_SCHEDULE.get(ins.int(76), ins.int(76))}")
    if ins.int(77) in _API:
        attrs.append(f"api_version={_API[ins.int(77)]}")
    take(8, 15, 16, 28, 50, 51, 56, 57, 58, 65, 74, 76, 77)
