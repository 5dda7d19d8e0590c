"""Printing the parts of XLA's module protos that many instructions share (shapes, layouts,
shardings, metadata, windows, replica groups, stack frames) as XLA's HLO printer spells them."""

from __future__ import annotations

from xlagraph.parse import proto_literals as lit
from xlagraph.parse.proto_wire import Message

_TUPLE, _OPAQUE, _TOKEN = 13, 14, 17
_MIN64 = -(1 << 63)  # a tile dimension printed `*` (combined dimensions)


def _escaped(text: str, keep_non_ascii: bool) -> str:
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\"'\\":
            out.append("\\" + ch)
        elif ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif 32 <= code < 127 or (keep_non_ascii and code >= 128):
            out.append(ch)
        else:
            out.append(f"\\{code:03o}")
    return '"' + "".join(out) + '"'


_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quoted(text: str) -> str:
    """A string attribute or metadata field, quoted and escaped as XLA's printer does (other
    than bytes past ASCII, kept as the characters they spell)."""
    return _escaped(text, keep_non_ascii=True)


def c_escaped(data: bytes) -> str:
    """absl::CEscape, quoted: how XLA prints a backend config that is not JSON."""
    return _escaped(data.decode("latin-1"), keep_non_ascii=False)


def ints_text(values: list[int]) -> str:
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
        text += layout_text(layout)
    return text


def layout_text(layout: Message) -> str:
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
    if kind in (0, 4, 5, 6):  # no devices: the type's name, as `last_tile_dims` writes it
        return _SUBGROUP[kind] + shard_group
    devices = s.ints(4)
    if kind == 1:
        return f"maximal device={devices[0] if devices else 0}" + shard_group
    dims = s.ints(3)
    text = "devices=[" + ",".join(str(d) for d in dims) + "]"
    reshape = s.ints(9)
    if reshape:
        text += "<=[" + ",".join(str(d) for d in reshape) + "]" + _transposed(s.ints(10))
    else:
        text += ",".join(str(d) for d in devices)
    if s.bool(6):
        text += " last_tile_dim_replicate"
    last = s.ints(8)
    if last:
        text += " last_tile_dims={" + ", ".join(_SUBGROUP.get(k, str(k)) for k in last) + "}"
    return text + shard_group


# OpMetadata's fields in the order XLA prints them: (key, field number, quoted string or int).
_METADATA = (
    ("op_type", 1, True),
    ("op_name", 2, True),
    ("source_file", 3, True),
    ("source_line", 4, False),
    ("source_end_line", 17, False),
    ("source_column", 18, False),
    ("source_end_column", 19, False),
    ("deduplicated_name", 12, True),
    ("scheduling_name", 16, True),
)


def metadata_text(m: Message, frames: bool) -> str:
    parts = []
    for key, field, is_string in _METADATA:
        if is_string and m.string(field):
            parts.append(f"{key}={quoted(m.string(field))}")
        elif not is_string and m.int(field):
            parts.append(f"{key}={m.int(field)}")
    if frames and m.int(15):
        parts.append(f"stack_frame_id={m.int(15)}")
    return "{" + " ".join(parts) + "}"


def window_text(w: Message) -> str:
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


def dim_labels(c: Message, rank: int) -> str:
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


def aliasing_text(entries: list[Message]) -> str:
    return (
        "{"
        + ", ".join(f"{ints_text(a.ints(1))}: ({a.int(2)}, {ints_text(a.ints(3))})" for a in entries)
        + "}"
    )


def first_rank(shape: Message | None) -> int:
    while shape is not None and shape.int(2) == _TUPLE:
        inner = shape.messages(4)
        shape = inner[0] if inner else None
    return len(shape.ints(3)) if shape is not None else 0


def alias_text(e: Message) -> str:
    kind = "must-alias" if e.int(4) == 2 else "may-alias"
    return f"{ints_text(e.ints(1))}: ({e.int(2)}, {ints_text(e.ints(3))}, {kind})"


def _transposed(perm: list[int]) -> str:
    """XLA's `T(...)` after an iota tile assignment's reshape, printed only for a real transpose."""
    return "T(" + ",".join(map(str, perm)) + ")" if perm and perm != list(range(len(perm))) else ""


def iota_groups_text(iota: Message) -> str:
    dims = ",".join(str(d) for d in iota.ints(3))
    return f"[{iota.int(1)},{iota.int(2)}]<=[{dims}]" + _transposed(iota.ints(4))


def mesh_groups_text(groups: Message) -> str:
    mesh = groups.message(1) or Message(b"")
    axes = [(a.string(1), a.int(2)) for a in mesh.messages(1)]
    text = "mesh[" + ",".join(f"'{n}'={size}" for n, size in axes) + "]"
    devices = mesh.ints(2)
    iota = mesh.message(3)
    if devices:
        text += ", device_ids=[" + ",".join(map(str, devices)) + "]"
    elif iota is not None and iota.fields:
        text += ", device_ids=([" + ",".join(map(str, iota.ints(1))) + "]" + _transposed(iota.ints(2)) + ")"
    refs = []
    for ref in groups.messages(2):
        i = ref.int(1)
        name = axes[i][0] if 0 <= i < len(axes) else str(i)
        sub = ref.message(2)
        refs.append(f"'{name}'" + (f":({sub.int(1)}){sub.int(2)}" if sub is not None else ""))
    return text + " {" + ",".join(refs) + "}"


def replica_groups_text(ins: Message) -> str:
    if ins.has(92):
        return iota_groups_text(ins.message(92))
    if ins.has(93):
        return mesh_groups_text(ins.message(93))
    devices = ins.message(87)
    if devices is not None:
        iota = devices.message(2)
        if iota is not None and iota.fields:
            return iota_groups_text(iota)
        groups = devices.messages(1)
    else:
        groups = ins.messages(49)
    return "{" + ",".join(ints_text(g.ints(1)) for g in groups) + "}"


def frame_tables(index: Message | None) -> list[str]:
    if index is None:
        return []
    out = []
    files, functions = index.strings(1), index.strings(2)
    if files:
        out += ["FileNames"] + [f"{i} {quoted(s)}" for i, s in enumerate(files, 1)] + [""]
    if functions:
        out += ["FunctionNames"] + [f"{i} {quoted(s)}" for i, s in enumerate(functions, 1)] + [""]
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


def default_compare_type(element_type: int) -> str:
    name = lit.type_name(element_type)
    if name.startswith(("f", "bf", "c")):
        return "FLOAT"
    if name.startswith("s"):
        return "SIGNED"
    return "UNSIGNED"
