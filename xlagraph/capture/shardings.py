"""`mark_sharding` calls a capture recorded, and what an HLO sharding means in the user's terms.

The HLO says `sharding={devices=[4,1]0,1,2,3}`; the user wrote `xs.mark_sharding(x, mesh,
('data', None))` at train.py:31. Only the capture saw the call (the `shard` journal records the
hook writes), so only it can translate back: a sharding and the tensor's global shape select
the calls that produced it. Pure reading, no torch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.diagnose.frames import call_site
from xlagraph.ir import Frame, strip_layout
from xlagraph.source_paths import portable_path

__all__ = [
    "MarkSharding",
    "find_marks",
    "in_user_terms",
    "normalize_sharding",
    "read_mark_shardings",
    "recompile_shardings",
]


@dataclass(frozen=True)
class MarkSharding:
    """One distinct `mark_sharding(t, mesh, spec)` call: first seen at `step`."""

    step: int
    tensor: int  # torch_xla tensor id, as in the live-tensor report
    shape: str  # the tensor's global shape, HLO style: f32[8,16]
    mesh: tuple[int, ...]
    axes: tuple[str, ...]
    spec: tuple[Any, ...]  # as passed: axis names, axis indices, None, or tuples of those
    sharding: str  # what torch_xla made of it: {devices=[4,1]0,1,2,3}
    frames: tuple[Frame, ...]  # innermost first

    @property
    def spec_text(self) -> str:
        """`('data', None)`, as the user wrote it."""
        return _py(self.spec)

    @property
    def mesh_text(self) -> str:
        named = ", ".join(f"{a}={n}" for a, n in zip(self.axes, self.mesh, strict=False))
        return f"mesh ({named})" if named else f"mesh {self.mesh}"

    @property
    def line(self) -> str:
        """`file:line` of the innermost user frame (FSDPv2's own calls are library frames)."""
        return call_site(self.frames)


def _py(x: Any) -> str:
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_py(y) for y in x)
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    return repr(x)


def normalize_sharding(text: str) -> str:
    """`sharding={devices=[4,1]0,1,2,3}`, `{devices=[4,1] 0,1,2,3}` -> `devices=[4,1]0,1,2,3`."""
    text = text.strip().removeprefix("sharding=").strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    return "".join(text.split())


def read_mark_shardings(process_dir: str | Path) -> tuple[MarkSharding, ...]:
    """The `shard` records of one process folder's journal; malformed ones are skipped."""
    from xlagraph.errors import InputError
    from xlagraph.parse.input_files import read_bytes  # regular files only, within the input limit

    try:
        data = read_bytes(Path(process_dir) / fmt.JOURNAL)
    except (OSError, InputError):
        return ()
    out = []
    for raw in data.split(b"\n"):
        if b'"shard"' not in raw:
            continue
        try:
            r = json.loads(raw)
            if not isinstance(r, dict) or r.get("k") != fmt.SHARD:
                continue
            out.append(
                MarkSharding(
                    step=int(r["step"]),
                    tensor=int(r.get("tensor", -1)),
                    shape=str(r["shape"]),
                    mesh=tuple(int(n) for n in r.get("mesh", ())),
                    axes=tuple(str(a) for a in r.get("axes", ())),
                    spec=tuple(_spec(x) for x in r.get("spec", ())),
                    sharding=str(r["sharding"]),
                    frames=tuple(
                        Frame(str(f[0]), portable_path(str(f[1])), int(f[2])) for f in r.get("frames", ())
                    ),
                )
            )
        except (ValueError, KeyError, TypeError, IndexError):
            continue
    return tuple(out)


def _spec(x: Any) -> Any:
    return tuple(_spec(y) for y in x) if isinstance(x, list) else x


def find_marks(marks: Iterable[MarkSharding], sharding: str, shape: str = "") -> tuple[MarkSharding, ...]:
    """The calls that produced `sharding` (on a tensor of `shape`, when given), latest first."""
    want = normalize_sharding(sharding)
    shape = strip_layout(shape) if shape else ""
    hits = [m for m in marks if normalize_sharding(m.sharding) == want and (not shape or m.shape == shape)]
    return tuple(sorted(hits, key=lambda m: -m.step))


def in_user_terms(marks: Iterable[MarkSharding], sharding: str, shape: str = "") -> str:
    """`('data', None) over mesh (data=4, model=1), set at train.py:31`, or "" when no recorded
    call explains it (a sharding the partitioner chose, or a capture without the records)."""
    hits = find_marks(marks, sharding, shape)
    if not hits:
        return "replicated (not marked)" if normalize_sharding(sharding) in ("", "replicated") else ""
    m = hits[0]
    lines = list(dict.fromkeys(h.line for h in hits if h.spec == m.spec and h.line))
    where = f", set at {', '.join(lines[:3])}" if lines else ""
    return f"{m.spec_text} over {m.mesh_text}{where}"


def recompile_shardings(report: Any, marks: tuple[MarkSharding, ...]) -> tuple[tuple[int, str], ...]:
    """For each recompile of a `RunReport` whose causes involve a marked tensor: (sync, sentence).

    A `sharding` change is put in the user's terms (`input p1: ('data', None) -> (None, 'data')
    over mesh (data=4, model=1), set at train.py:14`); a changed input shape that a recorded call
    marked names that call's line, which the HLO cannot (its metadata points into xla_sharding.py).
    """
    out: list[tuple[int, str]] = []
    if not marks:
        return ()
    modules = {v.letter: v.module for v in getattr(report, "variants", ())}
    shapes = _Shapes()
    for rc in getattr(report, "recompiles", ()):
        for cause in rc.causes:
            for ch in cause.changes:
                if ch.what == "sharding":
                    old_shape = shapes.of(
                        modules.get(rc.baseline.variant, "") if rc.baseline else "", ch.left
                    )
                    new_shape = shapes.of(modules.get(rc.variant, ""), ch.right)
                    name = ch.right or ch.left
                    out.append(
                        (rc.sync, _sharding_change(name, (ch.old, old_shape), (ch.new, new_shape), marks))
                    )
                elif str(cause.kind) == "parameter_shape" and ch.new.strip():
                    shape = ch.new.split()[0]
                    hits = [m for m in marks if m.shape == strip_layout(shape)]
                    if hits:
                        m = max(hits, key=lambda h: h.step)
                        out.append(
                            (
                                rc.sync,
                                f"input {ch.old} -> {ch.new} is the tensor sharded {m.spec_text} over "
                                f"{m.mesh_text} at {m.line} (step {m.step})",
                            )
                        )
    return tuple(dict.fromkeys(out))


class _Shapes:
    """Instruction shapes of the graphs a report names, each module read once (a marked call is
    told from another one of the same sharding by the tensor's shape)."""

    def __init__(self) -> None:
        self._modules: dict[str, dict[str, str]] = {}

    def of(self, spec: str, name: str) -> str:
        if not spec or not name:
            return ""
        if spec not in self._modules:
            try:
                from xlagraph.parse.sources import load_module

                module = load_module(spec)
                self._modules[spec] = {i.name: i.shape for c in module.computations for i in c.instructions}
            except Exception:  # a shape only narrows the match; without it every call is listed
                self._modules[spec] = {}
        return strip_layout(self._modules[spec].get(name, ""))


def _sharding_change(
    name: str, old: tuple[str, str], new: tuple[str, str], marks: tuple[MarkSharding, ...]
) -> str:
    """`p3.7: ('data', None) -> (None, 'data') over mesh (data=4, model=1), at train.py:15`."""
    a, b = find_marks(marks, *old), find_marks(marks, *new)
    what = f"{name} {new[1] or old[1]}".rstrip()
    if a and b and a[0].mesh_text == b[0].mesh_text:
        lines = list(dict.fromkeys(m.line for m in (a[0], b[0]) if m.line))
        where = f", set at {' and '.join(lines)}" if lines else ""
        tensor = f"tensor {b[0].tensor}, " if b[0].tensor >= 0 else ""
        spec = f"{a[0].spec_text} -> {b[0].spec_text} over {a[0].mesh_text}"
        return f"{what}: {spec}{where} ({tensor}step {b[0].step})"
    left = in_user_terms(marks, *old) or old[0] or "(none)"
    right = in_user_terms(marks, *new) or new[0] or "(none)"
    return f"{what}: {left} -> {right}"
