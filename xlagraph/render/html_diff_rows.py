"""The diff page's rows: one printed instruction with its status, operands linked, the counterpart
the diagnosis paired it with, what differs from it (shape, opcode, attributes) and the user's line
that made it. Used by `html_diff.build_diff_view`, for the rows in the page and those shipped as
data."""

from __future__ import annotations

from pathlib import PurePath

from xlagraph.canonical.attributes import attribute_values, compared_values
from xlagraph.canonical.written import as_written
from xlagraph.diff import ComputationPair
from xlagraph.ir import Instruction, strip_layout
from xlagraph.render.html_diff_state import Side, link
from xlagraph.render.html_diff_view import Attribute, Row
from xlagraph.render.text import printed
from xlagraph.source_paths import short_locations_in

__all__ = ["row_view"]

MAX_ATTRIBUTE = 160  # characters of an attribute value shown; the whole value is in its title
MAX_STACK = 8  # frames in a source tooltip


def row_view(side: Side, other: Side | None, pair: ComputationPair | None, ins: Instruction) -> Row:
    """Instruction `ins` of `side` as a row: its status, its counterpart in `other` (as `pair`
    decided it) and what differs from it, its operands linked, where the user's code made it."""
    module = side.canon.module
    status = side.status.get(ins.name, "same")
    partner = None
    counterpart = None
    if pair is not None and pair.decided is not None and pair.matching is not None and other is not None:
        d, m = pair.decided, pair.matching
        partner_name = (d.left if side.tag == "A" else d.right).get(ins.name)
        if partner_name is not None:
            partner = other.comp.by_name.get(partner_name)
            a = ins.name if side.tag == "A" else partner_name
            # A parameter the evidence re-paired was not paired so by the matcher.
            matcher = m.matcher.get(a, "") if m.left.get(a) == d.left.get(a) else "the inputs' evidence"
            title = f"{other.tag}: {printed(other.canon.module, partner_name)}" + (
                f" (matched by {matcher})" if matcher else ""
            )
            counterpart = link(other, partner_name, printed(module, ins.name), title)
    frames = module.frames_of(ins)
    source = stack = ""
    if frames:
        first = frames[0]
        source = f"{PurePath(first.file).name}:{first.line}" if first.line else PurePath(first.file).name
        stack = "\n".join(dict.fromkeys(short_locations_in(str(f)) for f in frames[:MAX_STACK]))
    theirs = attribute_values(partner) if partner is not None else {}
    compared = compared_values(ins) if partner is not None else [None] * len(ins.attributes)
    # Compared canonically, shown as the module wrote them (canonical/written.py).
    attributes = tuple(
        Attribute(k, _clip(v), v, cv is not None and cv != theirs.get(k))
        for (k, v), cv in zip(as_written(module, ins).attributes, compared, strict=True)
    )
    return Row(
        id=side.ids[ins.name],
        line=ins.line,
        name=printed(module, ins.name),
        root=ins.is_root,
        shape=ins.shape,
        shape_delta=partner is not None and strip_layout(ins.shape) != strip_layout(partner.shape),
        opcode=ins.opcode,
        opcode_delta=partner is not None and ins.opcode != partner.opcode,
        operands=tuple(link(side, o) for o in ins.operands),
        payload=ins.payload,
        attributes=attributes,
        source=source,
        stack=stack,
        op_name=ins.metadata.op_name if ins.metadata else "",
        status=status,
        counterpart=counterpart,
    )


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ATTRIBUTE else text[: MAX_ATTRIBUTE - 1] + "…"
