"""Read torch_xla's live-tensor report (`torch_xla._XLAC._xla_tensors_report`) into `LiveTensor`s
(the entry's text: docs/development.md, "Capture, inside"). The IR of each tensor is skipped: it is
most of the text (quadratic in graph size) and the graph itself is read from the HLO. Pure: no torch."""

from __future__ import annotations

import re

from xlagraph.parse.pt_xla_debug import parse_frame
from xlagraph.runlog import LiveTensor

__all__ = ["parse_tensors_report"]

# The shape holds commas (`f32[8,16]{1,0}`), so it is everything up to `, device=`.
_HEADER = re.compile(r"^Tensor: id=([0-9]{1,18}), shape=(.*), device=([^,]*), ir_nodes=([0-9]{1,18})\s*$")


def parse_tensors_report(text: str) -> tuple[LiveTensor, ...]:
    """The tensors of one report, in report order. Unknown lines are skipped."""
    tensors: list[LiveTensor] = []
    lines = text.split("\n")
    i, n = 0, len(lines)
    while i < n:
        m = _HEADER.match(lines[i])
        i += 1
        if m is None:
            continue
        frames = []
        while i < n and not lines[i].startswith("Tensor: "):
            line = lines[i]
            if line.startswith("IR {"):
                # Skip the IR body; a tensor's IR ends at the first line that is exactly "}".
                while i < n and lines[i].rstrip() != "}":
                    i += 1
            elif line.startswith("  ") and (frame := parse_frame(line)) is not None:
                frames.append(frame)
            i += 1
        tensors.append(
            LiveTensor(
                id=int(m.group(1)),
                shape=m.group(2),
                device=m.group(3),
                ir_nodes=int(m.group(4)),
                frames=tuple(frames),
            )
        )
    return tuple(tensors)
