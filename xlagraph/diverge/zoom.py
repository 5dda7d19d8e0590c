"""The second pass: at the first divergent step, the first op whose values part.

Both runs were rerun with `XLAGRAPH_ZOOM=K` (see `xlagraph.capture._zoom`): each process folder
holds `zoom.jsonl`, the fingerprint of every tensor each ATen op of step K read from outside the
step or returned, in the order the ops ran. The same program runs the same ops in the same order,
so the two lists are compared position by position: the first position whose op differs means the
runs took another path there; otherwise the first whose bits differ is where values part. Pure
functions; no torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from xlagraph.errors import InputError

__all__ = ["FILE", "ZoomFinding", "ZoomValue", "load_zoom", "zoom_in"]

FILE = "zoom.jsonl"
# Capture writes at most XLAGRAPH_ZOOM_MAX_OPS records (20000 by default); far more is not its file.
MAX_RECORDS = 1_000_000


@dataclass(frozen=True)
class ZoomValue:
    """One tensor an op of the zoomed step read from outside the step (`io` "in") or returned."""

    index: int
    op: str
    io: str
    name: str  # a parameter's or buffer's name, for "in" values that have one
    shape: tuple[int, ...]
    dtype: str
    at: str  # the user's line
    lib: str  # the innermost library line (torch/nn/functional.py:...)
    node: str  # the autograd node running it in backward, else ""
    bits: tuple[int, int, int, int]  # sum, wsum, nan, inf

    @property
    def signature(self) -> tuple[str, str, tuple[int, ...], str]:
        return (self.op, self.io, self.shape, self.dtype)

    def describe(self) -> str:
        what = f"aten::{self.op}"
        if self.io == "in":
            what += f" reads {self.name or 'a tensor made before the step'}"
        shape = "x".join(map(str, self.shape)) or "scalar"
        where = f" at {self.at}" if self.at else ""
        lib = f" ({self.lib})" if self.lib else ""
        node = f" in backward ({self.node})" if self.node else ""
        return f"{what} {self.dtype}[{shape}]{node}{where}{lib}"


@dataclass(frozen=True)
class ZoomFinding:
    """Where the zoomed step parts: `kind` "value" (same op, other bits) or "ops" (another op ran
    at that position), with `a` and `b` the two sides; or no finding with a `note` saying why."""

    step: int
    kind: str  # "value" | "ops" | "none"
    compared: int
    a: ZoomValue | None = None
    b: ZoomValue | None = None
    note: str = ""


def load_zoom(process_dir: str) -> tuple[int, tuple[ZoomValue, ...], str] | None:
    """(step, values, note) of a process folder's zoom.jsonl; None when it has none."""
    path = Path(process_dir) / FILE
    if not path.is_file():
        return None
    step, note = -1, ""
    values: list[ZoomValue] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                if r["k"] == "zoom":
                    step, note = int(r["step"]), str(r.get("note", ""))
                elif r["k"] == "error":
                    note = f"the zoom pass stopped: {r.get('v', '')}"
                elif r["k"] == "v":
                    values.append(_value(r))
                    if len(values) > MAX_RECORDS:
                        too_many = f"more than {MAX_RECORDS} records: not a zoom pass"
                        raise InputError(str(path), too_many, line=n)
            except (ValueError, KeyError, TypeError, IndexError):
                raise InputError(str(path), "not a zoom record", line=n) from None
    if step < 0 and not note:
        raise InputError(str(path), "no zoom header (a capture with XLAGRAPH_ZOOM=K writes one)")
    return step, tuple(values), note


def _value(r: dict[str, object]) -> ZoomValue:
    fp = r["fp"]
    assert isinstance(fp, list) and len(fp) >= 4
    shape = r.get("shape", [])
    assert isinstance(shape, list)
    return ZoomValue(
        index=int(r["i"]),  # type: ignore[call-overload]
        op=str(r["op"]),
        io=str(r.get("io", "out")),
        name=str(r.get("name", "")),
        shape=tuple(int(d) for d in shape),
        dtype=str(r.get("dtype", "")),
        at=str(r.get("at", "")),
        lib=str(r.get("lib", "")),
        node=str(r.get("node", "")),
        bits=(int(fp[0]), int(fp[1]), int(fp[2]), int(fp[3])),
    )


def zoom_in(dir_a: str, dir_b: str, step: int) -> ZoomFinding | None:
    """The first op of `step` where the two processes part; None when neither recorded a zoom."""
    za, zb = load_zoom(dir_a), load_zoom(dir_b)
    if za is None and zb is None:
        return None
    if za is None or zb is None:
        rerun = f"only one run has a zoom pass: rerun both with XLAGRAPH_ZOOM={step}"
        return ZoomFinding(step, "none", 0, note=rerun)
    (step_a, va, note_a), (step_b, vb, note_b) = za, zb
    if note_a or note_b:
        return ZoomFinding(step, "none", 0, note=note_a or note_b)
    if step_a != step or step_b != step:
        rerun = f"the zoom pass recorded step {step_a}/{step_b}: rerun both with XLAGRAPH_ZOOM={step}"
        return ZoomFinding(step, "none", 0, note=rerun)
    for i, (a, b) in enumerate(zip(va, vb, strict=False)):  # lengths: after the loop
        if a.signature != b.signature:
            return ZoomFinding(step, "ops", i, a, b)
        if a.bits != b.bits:
            return ZoomFinding(step, "value", i, a, b)
    if len(va) != len(vb):
        return ZoomFinding(step, "ops", min(len(va), len(vb)), note="one run ran more ops at this step")
    return ZoomFinding(
        step,
        "none",
        len(va),
        note=f"in the zoom pass all {len(va)} values of step {step} agree bit for bit: the divergence did "
        "not reproduce there (a race, or a source of nondeterminism outside the step's ops)",
    )
