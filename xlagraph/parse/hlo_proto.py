"""XLA's binary dumps (`HloModuleProto`, `HloProto`, `HloSnapshot`, `HloUnoptimizedSnapshot`),
printed as the HLO text XLA's own printer writes for the same module, so that every later
stage reads one format.

XLA writes these with `--xla_dump_hlo_as_proto` (`module_*.hlo.pb`), and Neuron's compile cache
keeps one per graph (`MODULE_*/model.hlo_module.pb`). Field numbers are those of
`xla/service/hlo.proto` and `xla/xla_data.proto`. What this printer does not spell as XLA does
is never dropped: any other field an instruction carries enters its frontend attributes as
`xlagraph.proto_fields="N:digest"`, so two modules that differ only there still differ.
The pieces: `proto_wire` (the wire format), `proto_text` (shapes, shardings, metadata, ...),
`proto_literals` (constants), `proto_attributes` (each opcode's attributes; `proto_dimensions`
those of dot, convolution, gather, scatter and custom call), this module (the module, its
computations and instructions).
"""

from __future__ import annotations

import hashlib

from xlagraph.parse import proto_literals as lit
from xlagraph.parse.proto_attributes import called_attributes, own_attributes
from xlagraph.parse.proto_text import (
    alias_text,
    c_escaped,
    frame_tables,
    ints_text,
    metadata_text,
    quoted,
    shape_text,
    sharding_text,
)
from xlagraph.parse.proto_wire import Message, WireError

__all__ = ["ProtoError", "looks_like_hlo_proto", "proto_to_text"]

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
            header.append(
                "input_output_alias={ " + ", ".join(alias_text(e) for e in alias.messages(1)) + " }"
            )
        donors = m.message(18)
        if donors is not None and donors.has(1):
            header.append(
                "buffer_donor={ "
                + ", ".join(f"({e.int(1)}, {ints_text(e.ints(2))})" for e in donors.messages(1))
                + " }"
            )
        program = m.message(4) or self._entry_program_shape()
        if program is not None:
            params = ", ".join(shape_text(p) for p in program.messages(1))
            header.append(f"entry_computation_layout={{({params})->{shape_text(program.message(2))}}}")
        # The module's own frontend attributes (field 19), last as XLA prints them: Shardy's meshes
        # live there, and the canonical form reads them.
        fa = m.message(19)
        if fa is not None and fa.has(1):
            header.append(_frontend_text(sorted((e.string(1), e.string(2)) for e in fa.messages(1))))
        out = [", ".join(header), ""]
        if self.frames:
            out.extend(frame_tables(m.message(17)))
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
                attrs.append(f"async_execution_thread={quoted(ins.string(79))}")
            take(79)
            if suffix == "start":
                inner_used: set[int] = set()
                inner_take = lambda *n: inner_used.update(n)  # noqa: E731
                own_attributes(
                    inner, wrapped, wrapped.message(3), attrs, inner_take, inner_used, operand_shape
                )
                names_called = [self.comp_names.get(i, f"missing.{i}") for i in wrapped.ints(38)]
                called_attributes(inner, wrapped, names_called, operand_shape, attrs, inner_take)
            opcode = f"{inner}-{suffix}"
            take(38)
            own_attributes("", ins, shape, attrs, take, used, None)
        else:
            own_attributes(opcode, ins, shape, attrs, take, used, operand_shape)
            called = [self.comp_names.get(i, f"missing.{i}") for i in ins.ints(38)]
            called_attributes(opcode, ins, called, operand_shape, attrs, take)
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
            attrs.append("backend_config=" + (text if braced else c_escaped(config)))
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
            attrs.insert(frontend_at, _frontend_text(entries))
        text = f"{ins.string(1)} = {self.shape_of(ins)} {opcode}({body})"
        return text + "".join(", " + a for a in attrs)


def _frontend_text(entries: list[tuple[str, str]]) -> str:
    """`frontend_attributes={k=v,...}`: a value that is itself braced is printed bare, as XLA does."""
    return (
        "frontend_attributes={"
        + ",".join(f"{k}={v if v.startswith('{') and v.endswith('}') else quoted(v)}" for k, v in entries)
        + "}"
    )


def _single_instruction(comp: Message) -> Message | None:
    """The root of a computation whose other instructions are all parameters."""
    root, found = comp.int(6), None
    for ins in comp.messages(2):
        if ins.int(35) == root:
            found = ins
        elif ins.string(2) != "parameter":
            return None
    return found


def _nonempty(values: list[int | tuple[int, int]]) -> bool:
    return any(isinstance(v, int) or v[1] > v[0] for v in values)
