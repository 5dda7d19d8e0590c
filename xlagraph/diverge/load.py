"""Reading the fingerprints a capture recorded (`XLAGRAPH_FINGERPRINTS=1`): parse -> immutable runs.

A capture folder holds one folder per process (`<host>-<pid>`); each with fingerprints holds
`fingerprints.bin` (30-byte records; 32 in format 1) and `fingerprints.jsonl` (names, rank, notes); see
`xlagraph.capture.fingerprint_format`. A killed run leaves at most a partial last step: it is dropped with
a note. Anything else malformed is an `InputError` naming the file.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from xlagraph.capture import fingerprint_format as ff
from xlagraph.errors import InputError

__all__ = ["Fingerprint", "FpRun", "FpStep", "TensorInfo", "load_fingerprints"]


@dataclass(frozen=True)
class Fingerprint:
    """One tensor at one step: exact integer fields, and the norm for tolerance mode."""

    sum: int
    wsum: int
    nan: int
    inf: int
    norm: float

    @property
    def bits(self) -> tuple[int, int, int, int]:
        """What bit-exact comparison compares (the norm is a float of its own: not exact)."""
        return (self.sum, self.wsum, self.nan, self.inf)


@dataclass(frozen=True)
class TensorInfo:
    name: str
    role: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class FpStep:
    index: int
    journal_step: int  # the capture journal's step of the sync after it (XLA), else -1
    values: Mapping[str, Fingerprint]


@dataclass(frozen=True)
class FpRun:
    """One process's fingerprints."""

    path: str  # the process folder
    rank: int | None
    world: int | None
    tensors: Mapping[str, TensorInfo]  # in recording order: roles in the order of fingerprint_format.ROLES
    steps: tuple[FpStep, ...]
    notes: tuple[str, ...] = ()
    has_journal: bool = False
    meta: Mapping[str, object] = field(default_factory=dict)

    @property
    def label(self) -> str:
        name = os.path.basename(self.path.rstrip(os.sep))
        return f"rank {self.rank} ({name})" if self.rank is not None else name


def load_fingerprints(path: str | os.PathLike[str]) -> tuple[FpRun, ...]:
    """Every process with fingerprints under `path` (a capture folder or one process folder),
    ordered by rank then folder name."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(path), "no such file or directory")
    if not p.is_dir():
        raise InputError(
            str(path), "not a capture folder (XLAGRAPH_CAPTURE=DIR with XLAGRAPH_FINGERPRINTS=1)"
        )
    dirs = [p] if (p / ff.BIN).exists() else sorted(c for c in p.iterdir() if (c / ff.BIN).is_file())
    if not dirs:
        raise InputError(
            str(path), "no fingerprints here: capture with XLAGRAPH_FINGERPRINTS=1 beside XLAGRAPH_CAPTURE"
        )
    runs = [_load_process(d) for d in dirs]
    return tuple(sorted(runs, key=lambda r: (r.rank is None, r.rank or 0, r.path)))


def _load_process(d: Path) -> FpRun:
    names: dict[int, TensorInfo] = {}
    notes: list[str] = []
    rank: int | None = None
    world: int | None = None
    meta: dict[str, object] = {}
    jsonl = d / ff.JSONL
    try:
        text = jsonl.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(jsonl), "missing (the names of the fingerprinted tensors)") from None
    except UnicodeDecodeError:
        raise InputError(str(jsonl), "not UTF-8 text") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            kind = r["k"]
            if kind == "name":
                names[int(r["id"])] = TensorInfo(
                    str(r["name"]), str(r["role"]), tuple(int(x) for x in r["shape"]), str(r["dtype"])
                )
            elif kind == "rank":
                rank, world = _opt_int(r.get("rank")), _opt_int(r.get("world"))
            elif kind == "note":
                notes.append(str(r["v"]))
            elif kind == "meta":
                meta = dict(r)
        except (ValueError, KeyError, TypeError) as e:
            if n == len(text.splitlines()) and not text.endswith("\n"):
                notes.append(f"{jsonl.name}: last line cut (the run was killed while writing)")
                break
            raise InputError(str(jsonl), f"not a fingerprint record ({type(e).__name__})", line=n) from None
    if rank is None:
        rank, world = _journal_rank(d, rank, world)
    steps = _read_bin(d / ff.BIN, names, notes, ff.record_format(meta))
    ordered = dict(
        sorted(((i.name, i) for i in names.values()), key=lambda kv: ff.ROLE_ORDER.get(kv[1].role, 9))
    )
    return FpRun(str(d), rank, world, ordered, steps, tuple(notes), (d / "journal.jsonl").is_file(), meta)


def _read_bin(
    path: Path, names: dict[int, TensorInfo], notes: list[str], record: struct.Struct
) -> tuple[FpStep, ...]:
    data = path.read_bytes()
    size = record.size
    usable = len(data) - len(data) % size
    if usable != len(data):
        notes.append(f"{path.name}: last record cut (the run was killed while writing)")
    steps: list[FpStep] = []
    pos = 0
    while pos < usable:
        rid, step, jstep, count, _, _ = ff.fields(record, data, pos)
        if rid != ff.HEADER_ID or count < 0:
            raise InputError(
                str(path), f"record {pos // size}: expected a step header, not a fingerprint file?"
            )
        pos += size
        if pos + count * size > usable:
            notes.append(f"{path.name}: step {step} cut (the run was killed while writing)")
            break
        values: dict[str, Fingerprint] = {}
        for _ in range(count):
            i, s, w, nan, inf, norm = ff.fields(record, data, pos)
            pos += size
            info = names.get(i)
            if info is None:
                raise InputError(
                    str(path), f"record {pos // size - 1}: tensor id {i} has no name in {ff.JSONL}"
                )
            values[info.name] = Fingerprint(s, w, nan, inf, norm)
        steps.append(FpStep(step, jstep, values))
    return tuple(steps)


def _journal_rank(d: Path, rank: int | None, world: int | None) -> tuple[int | None, int | None]:
    try:
        meta = json.loads((d / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return rank, world
    return _opt_int(meta.get("rank")), _opt_int(meta.get("world_size"))


def _opt_int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None
