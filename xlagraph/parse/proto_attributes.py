"""The attributes each kind of instruction prints itself (XLA's `PrintExtraAttributesImpl`) and
the computations it calls, from an `HloInstructionProto`, in the order XLA prints them (the
canonical form compares attributes in that order). Dot, convolution, gather, scatter and custom
call print theirs through `proto_dimensions`."""

from __future__ import annotations

from xlagraph.opcodes import REPLICA_GROUP_COLLECTIVES
from xlagraph.parse import proto_literals as lit
from xlagraph.parse.proto_dimensions import (
    GATHER,
    SCATTER,
    Take,
    conv,
    custom_call,
    dimension_numbers,
    dot,
    window,
)
from xlagraph.parse.proto_text import (
    aliasing_text,
    default_compare_type,
    first_rank,
    ints_text,
    quoted,
    replica_groups_text,
    shape_text,
    sharding_text,
)
from xlagraph.parse.proto_wire import Message

_DISTRIBUTION = {1: "rng_uniform", 2: "rng_normal"}
_RNG_ALGORITHM = {0: "rng_default", 1: "rng_three_fry", 2: "rng_philox"}
_FFT = {0: "FFT", 1: "IFFT", 2: "RFFT", 3: "IRFFT"}
_TRANSPOSE = {1: "NO_TRANSPOSE", 2: "TRANSPOSE", 3: "ADJOINT"}
_TO_APPLY = frozenset(
    {
        "call",
        "map",
        "reduce-window",
        "reduce",
        "all-reduce",
        "reduce-scatter",
        "all-reduce-start",
        "scatter",
        "sort",
        "topk",
    }
)
_ALWAYS_DIMENSIONS = frozenset(
    {
        "broadcast",
        "transpose",
        "reverse",
        "concatenate",
        "reduce",
        "sort",
        "map",
        "reduce-scatter",
        "all-gather",
        "all-gather-start",
        "get-dimension-size",
        "set-dimension-size",
    }
)


def own_attributes(
    opcode: str,
    ins: Message,
    shape: Message | None,
    attrs: list[str],
    take: Take,
    used: set[int],
    operand_shape: Message | None,
) -> None:
    """`PrintExtraAttributesImpl`: the attributes each kind of instruction prints itself."""
    if opcode == "get-tuple-element":
        attrs.append(f"index={ins.int(13)}")
        take(13)
    elif opcode == "iota":
        attrs.append(f"iota_dimension={ins.ints(14)[0] if ins.ints(14) else 0}")
        take(14)
    elif opcode == "compare":
        attrs.append(f"direction={ins.string(63)}")
        kind = ins.string(72)
        default = default_compare_type(operand_shape.int(2)) if operand_shape is not None else ""
        if kind and kind != default:
            attrs.append(f"type={kind}")
        take(63, 72)
    elif opcode in ("slice",):
        dims = ins.messages(17)
        strided = any(d.int(3, 1) != 1 for d in dims)  # XLA prints every stride or none
        parts = [f"[{d.int(1)}:{d.int(2)}" + (f":{d.int(3, 1)}" if strided else "") + "]" for d in dims]
        attrs.append("slice={" + ", ".join(parts) + "}")
        take(17)
    elif opcode == "dynamic-slice":
        attrs.append("dynamic_slice_sizes=" + ints_text(ins.ints(20)))
        take(20)
    elif opcode == "pad":
        config = ins.message(21)
        dims = config.messages(1) if config is not None else []
        interior = any(d.int(3) for d in dims)  # printed for every dimension or none
        attrs.append(
            "padding="
            + "x".join(f"{d.int(1)}_{d.int(2)}" + (f"_{d.int(3)}" if interior else "") for d in dims)
        )
        take(21)
    elif opcode == "dot":
        dot(ins, attrs, take)
    elif opcode == "convolution":
        conv(ins, shape, attrs)
        take(15, 16, 50, 51, 58, 75)
    elif opcode == "gather":
        dimension_numbers(ins.message(33), GATHER, attrs)
        attrs.append("slice_sizes=" + ints_text(ins.ints(34)))
        if ins.bool(67):
            attrs.append("indices_are_sorted=true")
        take(33, 34, 67)
    elif opcode == "scatter":
        dimension_numbers(ins.message(48), SCATTER, attrs)
        if ins.bool(67):
            attrs.append("indices_are_sorted=true")
        if ins.bool(69):
            attrs.append("unique_indices=true")
        take(48, 67, 69)
    elif opcode in ("reduce-window", "select-and-scatter"):
        window(ins, attrs)
        take(15)
    elif opcode == "fusion":
        attrs.append(f"kind={ins.string(11)}")
        take(11)
    elif opcode == "rng":
        attrs.append(f"distribution={_DISTRIBUTION.get(ins.int(23), ins.int(23))}")
        take(23)
    elif opcode == "rng-bit-generator":
        attrs.append(f"algorithm={_RNG_ALGORITHM.get(ins.int(70), ins.int(70))}")
        take(70)
    elif opcode == "reduce-precision":
        attrs.append(f"exponent_bits={ins.int(18)}, mantissa_bits={ins.int(19)}")
        take(18, 19)
    elif opcode in ("batch-norm-training", "batch-norm-inference", "batch-norm-grad"):
        attrs.append(f"epsilon={lit.float_text(ins.floats(24)[0] if ins.floats(24) else 0.0, 'f32')}")
        attrs.append(f"feature_index={ins.int(25)}")
        take(24, 25)
    elif opcode == "fft":
        attrs.append(f"fft_type={_FFT.get(ins.int(31), ins.int(31))}")
        attrs.append("fft_length=" + ints_text(ins.ints(32)))
        take(31, 32)
    elif opcode == "triangular-solve":
        o = ins.message(59) or Message(b"")
        for key, field in (("left_side", 1), ("lower", 2), ("unit_diagonal", 3)):
            if o.bool(field):
                attrs.append(f"{key}=true")
        attrs.append(f"transpose_a={_TRANSPOSE.get(o.int(4), o.int(4))}")
        take(59)
    elif opcode == "cholesky":
        o = ins.message(62)
        if o is not None and o.bool(1):
            attrs.append("lower=true")
        take(62)
    elif opcode == "custom-call":
        custom_call(ins, shape, attrs, take)
    elif opcode == "topk":
        attrs.append(f"k={ins.int(81)}")
        if ins.bool(85):
            attrs.append("largest=true")
        take(81, 85)
    elif opcode in ("infeed", "outfeed"):
        config = ins.raw(27 if opcode == "infeed" else 22)
        if config:
            key = "infeed_config" if opcode == "infeed" else "outfeed_config"
            attrs.append(f"{key}={quoted(config.decode('utf-8', 'replace'))}")
        if opcode == "outfeed" and ins.has(29):
            attrs.append("outfeed_shape=" + shape_text(ins.message(29)))
        take(22, 27, 29)
    elif opcode in ("send", "recv", "send-done", "recv-done"):
        if ins.int(26) > 0:
            attrs.append(f"channel_id={ins.int(26)}")
        if ins.bool(47):
            attrs.append("is_host_transfer=true")
        take(26, 47)
    elif opcode in ("collective-permute", "collective-permute-start"):
        if ins.int(26) > 0:
            attrs.append(f"channel_id={ins.int(26)}")
        pairs = ins.messages(52)
        attrs.append("source_target_pairs={" + ",".join(f"{{{p.int(1)},{p.int(2)}}}" for p in pairs) + "}")
        sizes = ins.ints(20)
        rank = first_rank(shape)
        if sizes and rank:
            groups = [sizes[i : i + rank] for i in range(0, len(sizes), rank)]
            attrs.append("slice_sizes={" + ",".join(ints_text(g) for g in groups) + "}")
        take(20, 26, 52)
    elif opcode in REPLICA_GROUP_COLLECTIVES:
        if ins.int(26) > 0:
            attrs.append(f"channel_id={ins.int(26)}")
        attrs.append("replica_groups=" + replica_groups_text(ins))
        if ins.bool(56):
            attrs.append("constrain_layout=true")
        # all-gather and all-to-all print their dimension before the device-id mode,
        # reduce-scatter (an all-reduce underneath) after it.
        dims_first = opcode in ("all-gather", "all-gather-start", "all-to-all")
        if dims_first and (ins.ints(14) or opcode != "all-to-all"):
            attrs.append("dimensions=" + ints_text(ins.ints(14)))
        if ins.bool(71):
            attrs.append("use_global_device_ids=true")
        if opcode == "reduce-scatter":
            attrs.append("dimensions=" + ints_text(ins.ints(14)))
        take(14, 26, 49, 56, 71, 87, 92, 93)
    elif opcode == "rng-get-and-update-state":
        attrs.append(f"delta={ins.int(66)}")
        take(66)
    elif opcode == "domain":
        # XLA's printer shows field 55 as the entry and 54 as the exit.
        entry, exit_ = ins.message(55), ins.message(54)
        if entry is not None and exit_ is not None:
            attrs.append(
                f'domain={{kind="sharding", entry={sharding_text(entry)}, exit={sharding_text(exit_)}}}'
            )
            take(54, 55)
    elif opcode == "scan":
        attrs.append("dimensions=" + ints_text(ins.ints(14)))
        attrs.append(f"num_carries={ins.int(94)}")
        if ins.bool(95):
            attrs.append("is_reverse=true")
        if ins.bool(96):
            attrs.append("is_associative=true")
        take(14, 94, 95, 96)
    elif opcode == "copy-start":
        if ins.has(80):
            attrs.append(f"cross_program_prefetch_index={ins.int(80)}")
        take(73, 80)
    elif opcode == "parameter":
        rep = ins.message(61)
        if rep is not None and rep.has(1):
            attrs.append(
                "parameter_replication={" + ",".join("true" if b else "false" for b in rep.ints(1)) + "}"
            )
        take(61)
    if (ins.ints(14) or opcode in _ALWAYS_DIMENSIONS) and 14 not in used:
        attrs.append("dimensions=" + ints_text(ins.ints(14)))
        take(14)
    if opcode == "sort" and ins.bool(60):
        attrs.append("is_stable=true")
        take(60)
    aliasing = ins.messages(74)
    if aliasing and 74 not in used:
        attrs.append("output_to_operand_aliasing=" + aliasing_text(aliasing))
        take(74)
    accuracy = ins.message(91)
    if accuracy is not None and accuracy.fields:
        tolerance = accuracy.message(2)
        if tolerance is not None:
            atol, rtol = (
                lit.float_text(v, "f64")
                for v in (tolerance.doubles(1) or [0.0])[:1] + (tolerance.doubles(2) or [0.0])[:1]
            )
            attrs.append(f"result_accuracy={{tolerance={{atol={atol},rtol={rtol},ulps={tolerance.int(3)}}}}}")
        else:
            attrs.append(f"result_accuracy={{mode={'highest' if accuracy.int(1) == 1 else 'default'}}}")
        take(91)
    if ins.string(79) and ins.string(79) != "main" and 79 not in used:
        attrs.append(f"async_execution_thread={quoted(ins.string(79))}")
    take(79)


def called_attributes(
    opcode: str, ins: Message, called: list[str], operand_shape: Message | None, attrs: list[str], take: Take
) -> None:
    take(38)
    if not called:
        return
    if opcode == "while":
        # The proto lists the body first, then the condition.
        attrs.append(f"condition={called[1] if len(called) > 1 else ''}, body={called[0]}")
    elif opcode == "select-and-scatter":
        attrs.append(f"select={called[0]}, scatter={called[1] if len(called) > 1 else ''}")
    elif opcode == "conditional":
        first = operand_shape
        if first is not None and first.int(2) == 1 and not first.ints(3) and len(called) == 2:
            attrs.append(f"true_computation={called[0]}, false_computation={called[1]}")
        else:
            attrs.append("branch_computations={" + ", ".join(called) + "}")
    elif opcode in _TO_APPLY or opcode == "scan":
        attrs.append(f"to_apply={called[0]}")
    elif opcode == "custom-call":
        attrs.append("called_computations={" + ", ".join(called) + "}")
    else:
        attrs.append("calls=" + (called[0] if len(called) == 1 else "{" + ", ".join(called) + "}"))
