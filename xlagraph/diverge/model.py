"""What `xlagraph diverge` finds: small immutable values, filled by `compare` and `replicas`, read
by the renderers (text, JSON, HTML)."""

from __future__ import annotations

from dataclasses import dataclass

from xlagraph.diverge.load import Fingerprint
from xlagraph.diverge.zoom import ZoomFinding

__all__ = [
    "BIT_EXACT",
    "DIVERGED",
    "WITHIN_TOLERANCE",
    "Deviation",
    "Divergence",
    "GraphCheck",
    "NanOnset",
    "TensorDiff",
]

BIT_EXACT, WITHIN_TOLERANCE, DIVERGED = "bit_exact", "within_tolerance", "diverged"

# Strip cells (HTML): how a tensor compares at a step.
SAME, WITHIN, DIFFERS, NAN, MISSING = "same", "within", "differs", "nan", "missing"


@dataclass(frozen=True)
class TensorDiff:
    """A tensor that differs at a step: its fingerprints on both sides (`a` the reference run or
    rank, `b` the other), and its norms' deviation."""

    name: str
    role: str
    step: int
    a: Fingerprint
    b: Fingerprint
    rank: int | None = None  # replicas: the rank that drifted (b), against the reference (a)

    @property
    def abs_dev(self) -> float:
        return abs(self.a.norm - self.b.norm)

    @property
    def rel_dev(self) -> float:
        ref = abs(self.a.norm)
        return self.abs_dev / ref if ref else (0.0 if self.abs_dev == 0 else float("inf"))


@dataclass(frozen=True)
class Deviation:
    """The largest norm deviation seen (tolerance mode)."""

    step: int
    tensor: str
    abs: float
    rel: float


@dataclass(frozen=True)
class NanOnset:
    """The first step a tensor holds a NaN or an Inf, in one run (`run`: "a"/"b", or a rank)."""

    run: str
    tensor: str
    role: str
    step: int
    nan: int
    inf: int


@dataclass(frozen=True)
class GraphCheck:
    """Whether both sides compiled and executed the same graphs up to the divergent step.

    `identical` is None when it cannot be told (one side has no journal). When the graphs differ:
    the first journal step and sync where they part, both hashes, and the diff engine's causes
    (`kind: summary`) when both HLO modules were kept."""

    identical: bool | None
    journal_step: int | None = None
    sync: int | None = None
    hash_a: str = ""
    hash_b: str = ""
    causes: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Divergence:
    """The comparison of two runs (or of the ranks of one run)."""

    verdict: str
    mode: str  # "runs" | "replicas"
    steps_compared: int
    first_step: int | None
    first_rank: int | None
    first: tuple[TensorDiff, ...]  # at the first divergent step, in role order
    graphs: GraphCheck
    inputs_identical: bool | None  # at the first divergent step (None: no inputs recorded)
    inputs_first_differ: int | None  # the first step whose inputs differ
    nan_onsets: tuple[NanOnset, ...]
    largest: Deviation | None
    rtol: float | None
    atol: float | None
    sources: tuple[str, ...]  # what was compared: paths / labels
    tensors: tuple[tuple[str, str], ...]  # (name, role) rows of the strip, in role order
    strip: tuple[tuple[int, tuple[str, ...]], ...]  # (step, cell per tensor), a window of steps
    notes: tuple[str, ...] = ()
    replicated: int | None = None  # replicas: tensors judged replicated across ranks
    zoom: ZoomFinding | None = None  # the second pass (XLAGRAPH_ZOOM=K) at the first divergent step
