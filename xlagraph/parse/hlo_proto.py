"""XLA's binary dumps (`HloModuleProto`, `HloProto`, `HloSnapshot`, `HloUnoptimizedSnapshot`),
printed as the HLO text XLA's own printer writes for the same module, so that every later
stage reads one format.

XLA writes these with `--xla_dump_hlo_as_proto` (`module_*.hlo.pb`), and Neuron's compile cache
keeps one per graph (`MODULE_*/model.hlo_module.pb`). Field numbers are those of
`xla/service/hlo.proto` and `xla/xla_data.proto`. What this printer does not spell as XLA does
is never dropped: any other field an instruction carries is printed as `proto_fields="..."`, a
digest of its bytes, so two modules that differ only there still differ.
"""

from __future__ import annotations

import hashlib

from xlagraph.parse import proto_literals as lit
from xlagraph.parse.proto_wire import Message, WireError

__all__ = ["ProtoError", "looks_like_hlo_proto", "proto_to_text"]

_TUPLE, _OPAQUE, _TOKEN = 13, 14, 17
_MIN64 = -(1 << 63)  # a tile dimension printed `*` (combined dimensions)
_ASYNC = frozenset({"async-start", "async-update", "async-done"})
_RANK_ATTRIBUTES = frozenset({"convolution", "custom-call", "collective-permute", "collective-permute-start"})

# Instruction fields that are not attributes: ids (the printer uses names), the name, opcode,
# shape and metadata (printed), and annotations XLA's text leaves out of a module's meaning.
_NOT_ATTRIBUTES = frozenset({1, 2, 3, 7, 35, 36, 37, 38, 82, 88})


class ProtoError(ValueError):
    """Bytes that are not a serialized HLO module."""


def looks_like_hlo_proto(data: bytes) -> bool:
    """Whether `data` parses as one of XLA's module messages (cheap enough for a sniff: the
    top-level message and its first computation's first instruction are decoded)."""
    try:
        return _module(Message(data)) is not None
    except (WireError, UnicodeDecodeError, ValueError):
        return False


def proto_to_text(data: bytes) -> str:
    try:
        module = _module(Message(data))
        if module is None:
            raise ProtoError("not an HLO module proto (no computations with instructions)")
        return _Printer(module).module()
    except WireError as e:
        raise ProtoError(f"malformed protobuf: {e}") from None
    except RecursionError:
        raise ProtoError("shapes or literals nested too deeply to be a module XLA wrote") from None


def _module(top: Message) -> Message | None:
    """The HloModuleProto in `top`: itself, or field 1 of an HloProto, of an HloSnapshot's
    HloProto, or of an HloUnoptimizedSnapshot."""
    for _ in range(3):
        if _is_module(top):
            return top
        inner = top.message(1) if top.has(1) else None
        if inner is None:
            return None
        top = inner
    return None


def _is_module(m: Message) -> bool:
    comps = m.fields.get(3)
    if not comps or isinstance(comps[0], int) or not m.has(1):
        return False
    first = Message(m.buf, *comps[0])
    instructions = first.fields.get(2)
    if not instructions or isinstance(instructions[0], int):
        return False
    ins = Message(m.buf, *instructions[0])
    opcode = ins.string(2)
    return bool(opcode) and opcode.replace("-", "").isalnum() and ins.has(3)


def _q(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _c_escape(data: bytes) -> str:
    """absl::CEscape, quoted: how XLA prints a backend config that is not JSON."""
    out = []
    for b in data:
        ch = chr(b)
        if ch in "\"'\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif 32 <= b < 127:
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _ints(values: list[int]) -> str:
    return "{" + ",".join(str(v) for v in values) + "}"


def shape_text(s: Message | None) -> str:
    if s is None:
        return "()"
    et = s.int(2)
    if et == _TUPLE:
        return "(" + ", ".join(shape_text(t) for t in s.messages(4)) + ")"
    if et == _TOKEN:
        return "token[]"
    if et == _OPAQUE:
        return "opaque[]"
    dims = s.ints(3)
    dynamic = s.ints(6)
    body = ",".join(("<=" if i < len(dynamic) and dynamic[i] else "") + str(d) for i, d in enumerate(dims))
    text = f"{lit.type_name(et)}[{body}]"
    layout = s.message(5)
    if layout is not None and (dims or layout.has(6) or layout.has(7) or layout.has(8)):
        text += _layout_text(layout)
    return text


def _layout_text(layout: Message) -> str:
    parts = ",".join(str(d) for d in layout.ints(1))
    extra = []
    tiles = layout.messages(6)
    if tiles:
        extra.append(
            "T"
            + "".join("(" + ",".join("*" if d == _MIN64 else str(d) for d in t.ints(1)) + ")" for t in tiles)
        )
    if layout.int(7):
        extra.append(f"E({layout.int(7)})")
    if layout.int(8):
        extra.append(f"S({layout.int(8)})")
    return "{" + parts + (":" + "".join(extra) if extra else "") + "}"


def sharding_text(s: Message) -> str:
    kind = s.int(1)
    if kind == 2:  # TUPLE
        return "{" + ", ".join(sharding_text(t) for t in s.messages(5)) + "}"
    return "{" + _sharding_body(s) + "}"


_SUBGROUP = {0: "replicated", 1: "maximal", 3: "other", 4: "manual", 5: "unknown", 6: "unreduced"}


def _sharding_body(s: Message) -> str:
    kind = s.int(1)
    shard_group = ""
    if s.bool(11):
        shard_group = f" shard_{'like' if s.int(13) == 1 else 'as'} {s.int(12)}"
    if kind == 0:
        return "replicated" + shard_group
    if kind == 4:
        return "manual" + shard_group
    if kind == 5:
        return "unknown" + shard_group
    if kind == 6:
        return "unreduced" + shard_group
    devices = s.ints(4)
    if kind == 1:
        return f"maximal device={devices[0] if devices else 0}" + shard_group
    dims = s.ints(3)
    text = "devices=[" + ",".join(str(d) for d in dims) + "]"
    reshape = s.ints(9)
    if reshape:
        text += "<=[" + ",".join(str(d) for d in reshape) + "]"
        perm = s.ints(10)
        if perm and perm != list(range(len(perm))):
            text += "T(" + ",".join(str(p) for p in perm) + ")"
    else:
        text += ",".join(str(d) for d in devices)
    if s.bool(6):
        text += " last_tile_dim_replicate"
    last = s.ints(8)
    if last:
        text += " last_tile_dims={" + ", ".join(_SUBGROUP.get(k, str(k)) for k in last) + "}"
    return text + shard_group


def metadata_text(m: Message, frames: bool) -> str:
    parts = []
    if m.string(1):
        parts.append(f"op_type={_q(m.string(1))}")
    if m.string(2):
        parts.append(f"op_name={_q(m.string(2))}")
    if m.string(3):
        parts.append(f"source_file={_q(m.string(3))}")
    if m.int(4):
        parts.append(f"source_line={m.int(4)}")
    if m.int(17):
        parts.append(f"source_end_line={m.int(17)}")
    if m.int(18):
        parts.append(f"source_column={m.int(18)}")
    if m.int(19):
        parts.append(f"source_end_column={m.int(19)}")
    if m.string(12):
        parts.append(f"deduplicated_name={_q(m.string(12))}")
    if m.string(16):
        parts.append(f"scheduling_name={_q(m.string(16))}")
    if frames and m.int(15):
        parts.append(f"stack_frame_id={m.int(15)}")
    return "{" + " ".join(parts) + "}"


def _window_text(w: Message) -> str:
    dims = w.messages(1)
    if not dims:
        return "{}"
    parts = ["size=" + "x".join(str(d.int(1)) for d in dims)]
    if any(d.int(2, 1) != 1 for d in dims):
        parts.append("stride=" + "x".join(str(d.int(2, 1)) for d in dims))
    if any(d.int(3) or d.int(4) for d in dims):
        parts.append("pad=" + "x".join(f"{d.int(3)}_{d.int(4)}" for d in dims))
    if any(d.int(6, 1) != 1 for d in dims):
        parts.append("lhs_dilate=" + "x".join(str(d.int(6, 1)) for d in dims))
    if any(d.int(5, 1) != 1 for d in dims):
        parts.append("rhs_dilate=" + "x".join(str(d.int(5, 1)) for d in dims))
    if any(d.bool(7) for d in dims):
        parts.append("rhs_reversal=" + "x".join("1" if d.bool(7) else "0" for d in dims))
    return "{" + " ".join(parts) + "}"


def _dim_labels(c: Message, rank: int) -> str:
    def labels(batch: int, feature: int, spatial: list[int], b: str, f: str) -> str:
        n = max([batch, feature, *spatial, rank - 1]) + 1
        out = ["?"] * n
        out[batch], out[feature] = b, f
        for i, d in enumerate(spatial):
            out[d] = str(i)
        return "".join(out)

    spatial = len(c.ints(11))
    lhs = labels(c.int(7), c.int(8), c.ints(11), "b", "f")
    rhs = labels(c.int(3), c.int(4), c.ints(6), "i", "o")
    out = labels(c.int(9), c.int(10), c.ints(12), "b", "f")
    del spatial
    return f"{lhs}_{rhs}->{out}"


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
_DISTRIBUTION = {1: "rng_uniform", 2: "rng_normal"}
_RNG_ALGORITHM = {0: "rng_default", 1: "rng_three_fry", 2: "rng_philox"}
_FFT = {0: "FFT", 1: "IFFT", 2: "RFFT", 3: "IRFFT"}
_TRANSPOSE = {1: "NO_TRANSPOSE", 2: "TRANSPOSE", 3: "ADJOINT"}
_API = {
    2: "API_VERSION_STATUS_RETURNING",
    3: "API_VERSION_STATUS_RETURNING_UNIFIED",
    4: "API_VERSION_TYPED_FFI",
}
_SCHEDULE = {1: "SCHEDULE_LATEST", 2: "SCHEDULE_EARLIEST"}
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
_COLLECTIVES = frozenset(
    {
        "all-reduce",
        "all-reduce-start",
        "all-gather",
        "all-gather-start",
        "reduce-scatter",
        "all-to-all",
        "ragged-all-to-all",
        "collective-broadcast",
    }
)


def _default_compare_type(element_type: int) -> str:
    name = lit.type_name(element_type)
    if name.startswith(("f", "bf", "c")):
        return "FLOAT"
    if name.startswith("s"):
        return "SIGNED"
    return "UNSIGNED"


class _Printer:
    def __init__(self, module: Message) -> None:
        self.m = module
        self.comps = module.messages(3)
        self.comp_names = {c.int(5): c.string(1) for c in self.comps}
        self.frames = module.has(17)
        self._shapes: dict[bytes, str] = {}
        # Async ops whose wrapped computation is one instruction print as that instruction's
        # `-start`/`-update`/`-done` (XLA's syntax sugar), and the wrapped computation not at all.
        by_id = {c.int(5): c for c in self.comps}
        self.wrapped: dict[int, Message] = {}
        self.async_callee: dict[int, int | None] = {}
        for comp in self.comps:
            for ins in comp.messages(2):
                if ins.string(2) in _ASYNC and ins.ints(38):
                    callee = by_id.get(ins.ints(38)[0])
                    single = _single_instruction(callee) if callee is not None else None
                    if single is not None:
                        self.wrapped[callee.int(5)] = single

    def operand_shape(self, ins: Message) -> Message | None:
        """The first operand's shape (decoded only where an attribute depends on it)."""
        operands = ins.fields.get(36)
        if not operands or ins.string(2) not in ("compare", "conditional", *_ASYNC):
            return None
        first = self.by_id.get(ins.ints(36)[0])
        return first.message(3) if first is not None else None

    def shape_of(self, ins: Message) -> str:
        """The instruction's printed shape; most instructions share a few shapes, so the text is
        kept by the shape's bytes instead of decoding each one."""
        values = ins.fields.get(3)
        if not values or isinstance(values[-1], int):
            return shape_text(None)
        key = ins.buf[values[-1][0] : values[-1][1]]
        text = self._shapes.get(key)
        if text is None:
            text = self._shapes[key] = shape_text(ins.message(3))
        return text

    def module(self) -> str:
        m = self.m
        header = [f"HloModule {m.string(1) or 'module'}"]
        if m.has(7):
            header.append("is_scheduled=true")
        alias = m.message(8)
        if alias is not None and alias.has(1):
            header.append("input_output_alias={ " + ", ".join(_alias(e) for e in alias.messages(1)) + " }")
        donors = m.message(18)
        if donors is not None and donors.has(1):
            header.append(
                "buffer_donor={ "
                + ", ".join(f"({e.int(1)}, {_ints(e.ints(2))})" for e in donors.messages(1))
                + " }"
            )
        program = m.message(4) or self._entry_program_shape()
        if program is not None:
            params = ", ".join(shape_text(p) for p in program.messages(1))
            header.append(f"entry_computation_layout={{({params})->{shape_text(program.message(2))}}}")
        out = [", ".join(header), ""]
        if self.frames:
            out.extend(_frame_tables(m.message(17)))
        entry_id, entry_name = m.int(6), m.string(2)
        for comp in self.comps:
            if comp.int(5) in self.wrapped:
                continue
            is_entry = comp.int(5) == entry_id if m.has(6) else comp.string(1) == entry_name
            out.append(self.computation(comp, is_entry))
        return "\n".join(out) + "\n"

    def _entry_program_shape(self) -> Message | None:
        for comp in self.comps:
            if comp.string(1) == self.m.string(2) or comp.int(5) == self.m.int(6):
                return comp.message(4)
        return None

    def computation(self, comp: Message, is_entry: bool) -> str:
        instructions = comp.messages(2)
        names = {i.int(35): i.string(1) for i in instructions}
        self.by_id = {i.int(35): i for i in instructions}
        root = comp.int(6)
        lines = [("ENTRY " if is_entry else "") + comp.string(1) + " {"]
        for ins in instructions:
            prefix = "ROOT " if ins.int(35) == root else ""
            lines.append("  " + prefix + self.instruction(ins, names))
        lines.append("}")
        return "\n".join(lines) + "\n"

    def instruction(self, ins: Message, names: dict[int, str]) -> str:
        opcode = ins.string(2)
        operands = [names.get(i, f"missing.{i}") for i in ins.ints(36)]
        # Decoded only for the attributes that read the result's rank (the printed shape is
        # cached by its bytes, `shape_of`).
        shape = ins.message(3) if opcode in _RANK_ATTRIBUTES else None
        used: set[int] = set()
        attrs: list[str] = []

        def take(*numbers: int) -> None:
            used.update(numbers)

        if opcode == "parameter":
            body = str(ins.int(9))
            take(9)
        elif opcode == "constant":
            literal = ins.message(8)
            body = lit.literal_text(literal) if literal is not None else ""
            take(8)
        else:
            body = ", ".join(operands)
        operand_shape = self.operand_shape(ins)
        wrapped = None
        if opcode in _ASYNC:
            # An update or done names the wrapped computation itself or through its operand.
            callee = (
                ins.ints(38)[0]
                if ins.ints(38)
                else self.async_callee.get(ins.ints(36)[0] if ins.ints(36) else -1)
            )
            wrapped = self.wrapped.get(callee) if callee is not None else None
            self.async_callee[ins.int(35)] = callee
        if wrapped is not None:
            suffix = opcode.split("-", 1)[1]
            inner = wrapped.string(2)
            if ins.string(79) and ins.string(79) != "main":
                attrs.append(f"async_execution_thread={_q(ins.string(79))}")
            take(79)
            if suffix == "start":
                inner_used: set[int] = set()
                inner_take = lambda *n: inner_used.update(n)  # noqa: E731
                self.extra(inner, wrapped, wrapped.message(3), attrs, inner_take, inner_used, operand_shape)
                names_called = [self.comp_names.get(i, f"missing.{i}") for i in wrapped.ints(38)]
                self.called(inner, wrapped, names_called, operands, attrs, inner_take)
            opcode = f"{inner}-{suffix}"
            take(38)
            self.extra("", ins, shape, attrs, take, used, None)
        else:
            self.extra(opcode, ins, shape, attrs, take, used, operand_shape)
            called = [self.comp_names.get(i, f"missing.{i}") for i in ins.ints(38)]
            self.called(opcode, ins, called, operands, attrs, take)
        if opcode == "call" and ins.bool(89):
            attrs.append("is_composite=true")
        take(89)
        if ins.has(40):
            attrs.append("sharding=" + sharding_text(ins.message(40)))
            take(40)
        frontend_at = len(attrs)  # printed here, after what is left over is known
        take(68)
        preds = ins.ints(37)
        if preds:
            attrs.append(
                "control-predecessors={" + ", ".join(names.get(i, f"missing.{i}") for i in preds) + "}"
            )
        meta = ins.message(7)
        if meta is not None and meta.fields:
            attrs.append("metadata=" + metadata_text(meta, self.frames))
        config = ins.raw(43)
        if config:
            text = config.decode("utf-8", "replace")
            braced = text.startswith("{") and text.endswith("}") and config.isascii()
            attrs.append("backend_config=" + (text if braced else _c_escape(config)))
        take(43)
        fa = ins.message(68)
        entries = sorted((e.string(1), e.string(2)) for e in fa.messages(1)) if fa is not None else []
        rest = sorted(
            n for n, v in ins.fields.items() if n not in used and n not in _NOT_ATTRIBUTES and _nonempty(v)
        )
        if rest:
            # Fields this printer does not spell (a newer XLA's): kept as a digest among the
            # frontend attributes (any key is valid there), so modules differing there differ.
            digest = hashlib.blake2b(digest_size=8)
            for n in rest:
                for v in ins.fields[n]:
                    digest.update(f"{n}:".encode() + ins.bytes_of(v) + b";")
            entries.append(("xlagraph.proto_fields", f"{','.join(map(str, rest))}:{digest.hexdigest()}"))
        if entries:
            # A value that is itself braced is printed bare, as XLA does.
            attrs.insert(
                frontend_at,
                "frontend_attributes={"
                + ",".join(f"{k}={v if v.startswith('{') and v.endswith('}') else _q(v)}" for k, v in entries)
                + "}",
            )
        text = f"{ins.string(1)} = {self.shape_of(ins)} {opcode}({body})"
        return text + "".join(", " + a for a in attrs)

    def extra(
        self,
        opcode: str,
        ins: Message,
        shape: Message | None,
        attrs: list[str],
        take,
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
            default = _default_compare_type(operand_shape.int(2)) if operand_shape is not None else ""
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
            attrs.append("dynamic_slice_sizes=" + _ints(ins.ints(20)))
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
            self._dot(ins, attrs, take)
        elif opcode == "convolution":
            self._conv(ins, shape, attrs, take)
        elif opcode == "gather":
            g = ins.message(33) or Message(b"")
            for key, field in (
                ("offset_dims", 1),
                ("collapsed_slice_dims", 2),
                ("start_index_map", 3),
                ("operand_batching_dims", 5),
                ("start_indices_batching_dims", 6),
            ):
                values = g.ints(field)
                if values or field <= 3:
                    attrs.append(f"{key}={_ints(values)}")
            attrs.append(f"index_vector_dim={g.int(4)}")
            attrs.append("slice_sizes=" + _ints(ins.ints(34)))
            if ins.bool(67):
                attrs.append("indices_are_sorted=true")
            take(33, 34, 67)
        elif opcode == "scatter":
            s = ins.message(48) or Message(b"")
            for key, field in (
                ("update_window_dims", 1),
                ("inserted_window_dims", 2),
                ("scatter_dims_to_operand_dims", 3),
                ("input_batching_dims", 5),
                ("scatter_indices_batching_dims", 6),
            ):
                values = s.ints(field)
                if values or field <= 3:
                    attrs.append(f"{key}={_ints(values)}")
            attrs.append(f"index_vector_dim={s.int(4)}")
            if ins.bool(67):
                attrs.append("indices_are_sorted=true")
            if ins.bool(69):
                attrs.append("unique_indices=true")
            take(48, 67, 69)
        elif opcode in ("reduce-window", "select-and-scatter"):
            if ins.has(15) and ins.message(15).has(1):
                attrs.append("window=" + _window_text(ins.message(15)))
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
            attrs.append("fft_length=" + _ints(ins.ints(32)))
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
            self._custom_call(ins, shape, attrs, take)
        elif opcode == "topk":
            attrs.append(f"k={ins.int(81)}")
            if ins.bool(85):
                attrs.append("largest=true")
            take(81, 85)
        elif opcode in ("infeed", "outfeed"):
            config = ins.raw(27 if opcode == "infeed" else 22)
            if config:
                key = "infeed_config" if opcode == "infeed" else "outfeed_config"
                attrs.append(f"{key}={_q(config.decode('utf-8', 'replace'))}")
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
            attrs.append(
                "source_target_pairs={" + ",".join(f"{{{p.int(1)},{p.int(2)}}}" for p in pairs) + "}"
            )
            sizes = ins.ints(20)
            rank = _first_rank(shape)
            if sizes and rank:
                groups = [sizes[i : i + rank] for i in range(0, len(sizes), rank)]
                attrs.append("slice_sizes={" + ",".join(_ints(g) for g in groups) + "}")
            take(20, 26, 52)
        elif opcode in _COLLECTIVES:
            if ins.int(26) > 0:
                attrs.append(f"channel_id={ins.int(26)}")
            attrs.append("replica_groups=" + _replica_groups(ins))
            if ins.bool(56):
                attrs.append("constrain_layout=true")
            # all-gather and all-to-all print their dimension before the device-id mode,
            # reduce-scatter (an all-reduce underneath) after it.
            dims_first = opcode in ("all-gather", "all-gather-start", "all-to-all")
            if dims_first and (ins.ints(14) or opcode != "all-to-all"):
                attrs.append("dimensions=" + _ints(ins.ints(14)))
            if ins.bool(71):
                attrs.append("use_global_device_ids=true")
            if opcode == "reduce-scatter":
                attrs.append("dimensions=" + _ints(ins.ints(14)))
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
            attrs.append("dimensions=" + _ints(ins.ints(14)))
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
            attrs.append("dimensions=" + _ints(ins.ints(14)))
            take(14)
        if opcode == "sort" and ins.bool(60):
            attrs.append("is_stable=true")
            take(60)
        aliasing = ins.messages(74)
        if aliasing and 74 not in used:
            attrs.append("output_to_operand_aliasing=" + _aliasing(aliasing))
            take(74)
        accuracy = ins.message(91)
        if accuracy is not None and accuracy.fields:
            tolerance = accuracy.message(2)
            if tolerance is not None:
                atol, rtol = (
                    lit.float_text(v, "f64")
                    for v in (tolerance.doubles(1) or [0.0])[:1] + (tolerance.doubles(2) or [0.0])[:1]
                )
                attrs.append(
                    f"result_accuracy={{tolerance={{atol={atol},rtol={rtol},ulps={tolerance.int(3)}}}}}"
                )
            else:
                attrs.append(f"result_accuracy={{mode={'highest' if accuracy.int(1) == 1 else 'default'}}}")
            take(91)
        if ins.string(79) and ins.string(79) != "main" and 79 not in used:
            attrs.append(f"async_execution_thread={_q(ins.string(79))}")
        take(79)

    def _dot(self, ins: Message, attrs: list[str], take) -> None:
        d = ins.message(30) or Message(b"")
        if d.ints(3):
            attrs.append("lhs_batch_dims=" + _ints(d.ints(3)))
        attrs.append("lhs_contracting_dims=" + _ints(d.ints(1)))
        if d.ints(4):
            attrs.append("rhs_batch_dims=" + _ints(d.ints(4)))
        attrs.append("rhs_contracting_dims=" + _ints(d.ints(2)))
        self._precision(ins, attrs)
        take(30, 51)

    def _precision(self, ins: Message, attrs: list[str]) -> None:
        p = ins.message(51)
        if p is None:
            return
        ops = p.ints(1)
        if any(ops):
            attrs.append("operand_precision={" + ",".join(_PRECISION.get(o, str(o)) for o in ops) + "}")
        if p.int(2):
            attrs.append(f"algorithm={_ALGORITHMS.get(p.int(2), p.int(2))}")

    def _conv(self, ins: Message, shape: Message | None, attrs: list[str], take) -> None:
        if ins.has(15) and ins.message(15).has(1):
            attrs.append("window=" + _window_text(ins.message(15)))
        c = ins.message(16)
        if c is not None:
            rank = len(shape.ints(3)) if shape is not None else 0
            attrs.append("dim_labels=" + _dim_labels(c, rank))
        if ins.int(50, 1) != 1:
            attrs.append(f"feature_group_count={ins.int(50, 1)}")
        if ins.int(58, 1) != 1:
            attrs.append(f"batch_group_count={ins.int(58, 1)}")
        self._precision(ins, attrs)
        take(15, 16, 50, 51, 58, 75)

    def _custom_call(self, ins: Message, shape: Message | None, attrs: list[str], take) -> None:
        if ins.has(15) and ins.message(15).has(1):
            attrs.append("window=" + _window_text(ins.message(15)))
        if ins.has(16):
            rank = len(shape.ints(3)) if shape is not None else 0
            attrs.append("dim_labels=" + _dim_labels(ins.message(16), rank))
        if ins.int(50, 1) != 1:
            attrs.append(f"feature_group_count={ins.int(50, 1)}")
        if ins.int(58, 1) != 1:
            attrs.append(f"batch_group_count={ins.int(58, 1)}")
        self._precision(ins, attrs)
        attrs.append(f"custom_call_target={_q(ins.string(28))}")
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
            attrs.append("output_to_operand_aliasing=" + _aliasing(aliasing))
        if ins.int(76):
            attrs.append(f"schedule={_SCHEDULE.get(ins.int(76), ins.int(76))}")
        if ins.int(77) in _API:
            attrs.append(f"api_version={_API[ins.int(77)]}")
        take(8, 15, 16, 28, 50, 51, 56, 57, 58, 65, 74, 76, 77)

    def called(
        self, opcode: str, ins: Message, called: list[str], operands: list[str], attrs: list[str], take
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
            first = self.operand_shape(ins)
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
        del operands


def _aliasing(entries: list[Message]) -> str:
    return "{" + ", ".join(f"{_ints(a.ints(1))}: ({a.int(2)}, {_ints(a.ints(3))})" for a in entries) + "}"


def _single_instruction(comp: Message) -> Message | None:
    """The root of a computation whose other instructions are all parameters."""
    root, found = comp.int(6), None
    for ins in comp.messages(2):
        if ins.int(35) == root:
            found = ins
        elif ins.string(2) != "parameter":
            return None
    return found


def _first_rank(shape: Message | None) -> int:
    while shape is not None and shape.int(2) == _TUPLE:
        inner = shape.messages(4)
        shape = inner[0] if inner else None
    return len(shape.ints(3)) if shape is not None else 0


def _nonempty(values: list[int | tuple[int, int]]) -> bool:
    return any(isinstance(v, int) or v[1] > v[0] for v in values)


def _alias(e: Message) -> str:
    kind = "must-alias" if e.int(4) == 2 else "may-alias"
    return f"{_ints(e.ints(1))}: ({e.int(2)}, {_ints(e.ints(3))}, {kind})"


def _iota_groups(iota: Message) -> str:
    text = f"[{iota.int(1)},{iota.int(2)}]<=[" + ",".join(str(d) for d in iota.ints(3)) + "]"
    perm = iota.ints(4)
    if perm and perm != list(range(len(perm))):
        text += "T(" + ",".join(str(p) for p in perm) + ")"
    return text


def _mesh_groups(groups: Message) -> str:
    mesh = groups.message(1) or Message(b"")
    axes = [(a.string(1), a.int(2)) for a in mesh.messages(1)]
    text = "mesh[" + ",".join(f"'{n}'={size}" for n, size in axes) + "]"
    devices = mesh.ints(2)
    iota = mesh.message(3)
    if devices:
        text += ", device_ids=[" + ",".join(map(str, devices)) + "]"
    elif iota is not None and iota.fields:
        perm = iota.ints(2)
        transposed = "T(" + ",".join(map(str, perm)) + ")" if perm and perm != list(range(len(perm))) else ""
        text += ", device_ids=([" + ",".join(map(str, iota.ints(1))) + "]" + transposed + ")"
    refs = []
    for ref in groups.messages(2):
        i = ref.int(1)
        name = axes[i][0] if 0 <= i < len(axes) else str(i)
        sub = ref.message(2)
        refs.append(f"'{name}'" + (f":({sub.int(1)}){sub.int(2)}" if sub is not None else ""))
    return text + " {" + ",".join(refs) + "}"


def _replica_groups(ins: Message) -> str:
    if ins.has(92):
        return _iota_groups(ins.message(92))
    if ins.has(93):
        return _mesh_groups(ins.message(93))
    devices = ins.message(87)
    if devices is not None:
        iota = devices.message(2)
        if iota is not None and iota.fields:
            text = f"[{iota.int(1)},{iota.int(2)}]<=[" + ",".join(str(d) for d in iota.ints(3)) + "]"
            perm = iota.ints(4)
            if perm and perm != list(range(len(perm))):
                text += "T(" + ",".join(str(p) for p in perm) + ")"
            return text
        groups = devices.messages(1)
    else:
        groups = ins.messages(49)
    return "{" + ",".join(_ints(g.ints(1)) for g in groups) + "}"


def _frame_tables(index: Message | None) -> list[str]:
    if index is None:
        return []
    out = []
    files, functions = index.strings(1), index.strings(2)
    if files:
        out += ["FileNames"] + [f"{i} {_q(s)}" for i, s in enumerate(files, 1)] + [""]
    if functions:
        out += ["FunctionNames"] + [f"{i} {_q(s)}" for i, s in enumerate(functions, 1)] + [""]
    locations = index.messages(3)
    if locations:
        out.append("FileLocations")
        for i, loc in enumerate(locations, 1):
            out.append(
                f"{i} {{file_name_id={loc.int(1)} function_name_id={loc.int(2)} line={loc.int(3)} "
                f"end_line={loc.int(5)} column={loc.int(4)} end_column={loc.int(6)}}}"
            )
        out.append("")
    frames = index.messages(4)
    if frames:
        out.append("StackFrames")
        # XLA's printer writes the parent one higher than the proto holds it (a frame without a
        # parent, 0 in the proto, is printed as 1).
        out += [
            f"{i} {{file_location_id={f.int(1)} parent_frame_id={f.int(2) + 1}}}"
            for i, f in enumerate(frames, 1)
        ]
        out.append("")
    return out
