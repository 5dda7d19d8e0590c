"""Buffer donation: the module header's `input_output_alias` / `buffer_donor`.

Which input buffer an output may reuse is part of the compiled executable (JAX compiles once per
`donate_argnums`), yet it is printed only in the header, outside every computation. The entries
are compared through the entry's pairing: A's input and output numbers are translated to B's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xlagraph.diagnose.causes import CauseKind, Change
from xlagraph.diagnose.listing import fmt_list

if TYPE_CHECKING:
    from xlagraph.diagnose.comparison import Comparison

__all__ = ["compare_donation"]

_ALIAS = re.compile(r"\{([0-9,\s]*)\}\s*:\s*\(\s*(\d+)\s*,\s*\{([0-9,\s]*)\}\s*(?:,\s*([a-z-]+))?\s*\)")
_DONOR = re.compile(r"\(\s*(\d+)\s*,\s*\{([0-9,\s]*)\}\s*\)")
_WS = re.compile(r"\s+")

# (output slot or -1 for a donor, nested output index, input number, input index, kind)
_Entry = tuple[int, str, int, str, str]


def _entries(header: dict[str, str]) -> set[_Entry]:
    found: set[_Entry] = set()
    for m in _ALIAS.finditer(header.get("input_output_alias", "")):
        out = [int(x) for x in _WS.sub("", m.group(1)).split(",") if x]
        slot = out[0] if out else 0
        rest = ",".join(map(str, out[1:]))
        found.add((slot, rest, int(m.group(2)), _WS.sub("", m.group(3)), m.group(4) or "may-alias"))
    for m in _DONOR.finditer(header.get("buffer_donor", "")):
        found.add((-1, "", int(m.group(1)), _WS.sub("", m.group(2)), "donor"))
    return found


def _describe(e: _Entry) -> str:
    if e[0] < 0:
        return f"input {e[2]} donated"
    return f"input {e[2]} -> output {e[0]}{'{' + e[1] + '}' if e[1] else ''} ({e[4]})"


def compare_donation(cmp: Comparison, output_pairs: list[tuple[int, int]]) -> None:
    """A cause when the entries differ once A's numbers are B's. A graph from torch_xla's save
    file (XLA_SAVE_TENSORS_FILE, it carries torch_xla's graph hash) is lowered before donation is
    decided, so it prints none: nothing to compare against it."""
    if cmp.lm.module.info.graph_hash or cmp.rm.module.info.graph_hash:
        return
    lh, rh = dict(cmp.lm.module.header), dict(cmp.rm.module.header)
    left, right = _entries(lh), _entries(rh)
    if not left and not right:
        return
    by_number = {n: name for name, n in cmp.left.param_number.items()}
    slots = dict(output_pairs)

    def translated(e: _Entry) -> _Entry | None:
        b = cmp.pair_left.get(by_number.get(e[2], ""))
        number = cmp.right.param_number.get(b) if b is not None else None
        slot = e[0] if e[0] < 0 else slots.get(e[0])
        if number is None or slot is None:
            return None
        return (slot, e[1], number, e[3], e[4])

    # Inputs or outputs one graph alone has are the added/removed cause's; their donation follows.
    mapped = {e: t for e in left if (t := translated(e)) is not None}
    paired_inputs = {cmp.right.param_number[b] for b in cmp.pair_left.values() if b in cmp.right.param_number}
    paired_slots = set(slots.values())
    only_a = [e for e, t in mapped.items() if t not in right]
    seen = set(mapped.values())
    only_b = [
        e for e in right if e not in seen and e[2] in paired_inputs and (e[0] < 0 or e[0] in paired_slots)
    ]
    if not only_a and not only_b:
        return
    changes = tuple(Change("", "", "input_output_alias", _describe(e), "") for e in sorted(only_a)) + tuple(
        Change("", "", "input_output_alias", "", _describe(e)) for e in sorted(only_b)
    )
    parts = []
    if only_a:
        parts.append(f"only in A: {fmt_list([_describe(e) for e in sorted(only_a)], 3)}")
    if only_b:
        parts.append(f"only in B: {fmt_list([_describe(e) for e in sorted(only_b)], 3)}")
    cmp.cause(
        CauseKind.ATTRIBUTE,
        "buffer donation differs (the header's input_output_alias / buffer_donor): " + "; ".join(parts),
        changes=changes,
    )
