"""The second pass: at the first divergent step, the first op whose values part.

Both runs were rerun with `XLAGRAPH_ZOOM=K` (see `xlagraph.capture._zoom`): each process folder
holds `zoom.jsonl`, the fingerprint of every tensor each ATen op of step K read from outside the
step or returned, in the order the ops ran. The same program runs the same ops in the same order,
so the two lists are compared position by position: the first position whose op differs means the
runs took another path there; otherwise the first whose bits differ is where values part, and
`why` says what the records tell of it: another Python value passed to the op, memory read on one
CUDA stream while another was writing it (every value it reads agreed, yet its result differs), a
kernel that is not deterministic. Pure functions; no torch.
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
    stream: int | None = None  # the CUDA stream the op ran on (0: the default one); None off CUDA
    reads: tuple[int, ...] = ()  # the records that last wrote the memory the op reads (eager)
    args: tuple[str, ...] = ()  # the op's non-tensor arguments, as text

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
    why: str = ""  # for "value": what the records say made the values part


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
        stream=int(r["s"]) if r.get("s") is not None else None,  # type: ignore[call-overload]
        reads=tuple(int(j) for j in r.get("r", ())),  # type: ignore[attr-defined]
        args=tuple(str(x) for x in r.get("a", ())),  # type: ignore[attr-defined]
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
    if step_a == step_b < step:
        return ZoomFinding(step, "none", len(va), note=_moved(step_a, len(va), step))
    if step_a != step or step_b != step:
        rerun = f"the zoom pass recorded step {step_a}/{step_b}: rerun both with XLAGRAPH_ZOOM={step}"
        return ZoomFinding(step, "none", 0, note=rerun)
    for i, (a, b) in enumerate(zip(va, vb, strict=False)):  # lengths: after the loop
        if a.signature != b.signature:
            return ZoomFinding(step, "ops", i, a, b)
        if a.bits != b.bits:
            return ZoomFinding(step, "value", i, a, b, why=_why(va, a, b))
    if len(va) != len(vb):
        return ZoomFinding(step, "ops", min(len(va), len(vb)), note="one run ran more ops at this step")
    return ZoomFinding(
        step,
        "none",
        len(va),
        note=f"in the zoom pass all {len(va)} values of step {step} agree bit for bit: the divergence did "
        "not reproduce there (a race, or a source of nondeterminism outside the step's ops)",
    )


# CUDA kernels that accumulate with atomics: their results' bits depend on scheduling
# (torch.use_deterministic_algorithms lists them).
NONDETERMINISTIC = frozenset(
    {
        "index_add",
        "index_add_",
        "index_put",
        "index_put_",
        "scatter_add",
        "scatter_add_",
        "scatter_reduce",
        "scatter_reduce_",
        "put_",
        "bincount",
        "histc",
        "cumsum",
        "embedding_dense_backward",
        "_embedding_bag_dense_backward",
        "upsample_bilinear2d_backward",
        "grid_sampler_2d_backward",
    }
)


def _why(values: tuple[ZoomValue, ...], a: ZoomValue, b: ZoomValue) -> str:
    """What the records say of the first op whose values part; every value before it agreed."""
    if a.args != b.args:
        return (
            f"it was passed other values: ({', '.join(a.args)}) vs ({', '.join(b.args)}): a Python "
            "number the step computes or schedules differently (a learning rate, a scale, a size)"
        )
    writers = [values[j] for j in a.reads if 0 <= j < len(values) and values[j].index < a.index]
    other = [w for w in writers if None not in (w.stream, a.stream) and w.stream != a.stream]
    if other:
        w = other[-1]
        return (
            f"every value it reads agreed, yet its result differs: it ran on CUDA stream {a.stream} and "
            f"reads memory that op #{w.index} (aten::{w.op}{_at(w)}) wrote on stream {w.stream}, so it "
            "read that memory before the write finished: a race between streams. Make the reading "
            "stream wait for the writing one before the read (`reader.wait_stream(writer)`, or an event "
            "recorded after the write), and `t.record_stream(reader)` where the tensor is freed"
        )
    if a.op in NONDETERMINISTIC and a.stream is not None:
        return (
            f"every value it reads agreed, yet its result differs: aten::{a.op} on CUDA accumulates "
            "with atomics, in an order that changes from run to run; "
            "torch.use_deterministic_algorithms(True) picks a deterministic kernel or names the op"
        )
    if writers and a.io == "out":
        return (
            "every value it reads agreed, yet its result differs: the op read memory at another "
            "time (another thread or stream writing it) or is not deterministic"
        )
    return ""


def _at(v: ZoomValue) -> str:
    return f" at {v.at}" if v.at else ""


def _moved(observed: int, values: int, step: int) -> str:
    """The zoomed step agrees in both runs, which part later: the divergence moved."""
    return (
        f"the step it observed, {observed}, agrees bit for bit in both runs ({values} values), which "
        f"part at step {step} instead. A divergence that moves when the runs are repeated, or hides "
        "while a step is observed, depends on timing: a race between CUDA streams or threads, or a "
        "kernel that is not deterministic, not a different computation. Rerunning with "
        f"XLAGRAPH_ZOOM={step} may hide it again; TORCH_CUDA_SANITIZER=1 names unsynchronized "
        "accesses between streams"
    )
