"""A recompile as diagnosis explains it: the graph, its baseline, the causes and what they point at
in the user's program. Immutable data, no behaviour: `report/` builds it, the joins of
`diagnose/dynamo_join/` rewrite it, `render/` shows it (`report/model.py` names it too)."""

from __future__ import annotations

from dataclasses import dataclass

from xlagraph.diagnose.causes import Cause
from xlagraph.ir import Frame

__all__ = ["Attribution", "Baseline", "Recompile", "TensorRef"]


@dataclass(frozen=True)
class TensorRef:
    """A live tensor a cause is attributed to; `line` is the user line that created it. `match`
    says how sure: `shape and line` (its shape fits and the cause cites the line that created
    it), `by elimination` (the only tensors of those shapes the other graph did not compute, as
    capture saw them) or `shape` (a candidate of the right shape)."""

    id: int
    shape: str
    line: str
    match: str
    frames: tuple[Frame, ...] = ()  # user frames, innermost first
    library_frames: int = 0  # how many library frames were folded
    held_by: str = ""  # what kept it alive at the sync (`self.metrics['logits'] (in fit)`)
    stored_at: tuple[str, ...] = ()  # the user's lines that store it there


@dataclass(frozen=True)
class Attribution:
    """What one cause (`cause`: its index in `Recompile.causes`) means in the user's program.

    `items` name the graph's pieces involved (`output 5: f32[]`, `input 0: f32[4,8] -> f32[2,8]`,
    `A's output 3 is B's 5`, a collective bucket); `tensors` the live tensors they are;
    `lines` the user's source lines, `library_lines` the library lines folded away.
    """

    cause: int
    kind: str
    summary: str
    items: tuple[str, ...] = ()
    tensors: tuple[TensorRef, ...] = ()
    lines: tuple[str, ...] = ()
    library_lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Baseline:
    """The earlier graph a recompile is explained against, and why that one."""

    variant: str
    sync: int
    reason: str  # same call site | same line, other callers | nearest earlier graph: none from this call site
    # Why this one of those compared: "the only earlier graph compared", "closest of B, A: A
    # differs only by warm-up state, B only by order (the same computation)", ...; "" where
    # nothing was compared.
    why: str = ""
    compared: tuple[str, ...] = ()  # the variants diffed in full, most recent first


@dataclass(frozen=True)
class Recompile:
    """A compile after the first: the graph, its baseline, the causes and what they point at.

    `causes` are the engine's differences (`DiffResult.differences`); empty when the graph could
    not be compared, and `note` says why. `lines` are the user lines the report cites for this
    recompile, most specific first: user source lines of the causes, then the sync's call site.
    """

    sync: int
    step: int
    variant: str
    graph_hash: str
    call_site: str
    trigger: str
    frames: tuple[Frame, ...]  # user frames of the sync, innermost first
    library_frames: tuple[Frame, ...]
    baseline: Baseline | None
    causes: tuple[Cause, ...]
    attribution: tuple[Attribution, ...]
    lines: tuple[str, ...]
    note: str = ""
    compile_seconds: float = 0.0
    notes: tuple[str, ...] = ()  # remarks of the diff that change nothing (dead code)
    dynamo: str = ""  # the torch.compile compile (its id, "1/1") that made this graph, where one did
    # The first graph of another program at the start of the run or after the loop (the step
    # function after torch_xla.compile's pending graph, metrics read after the last step): a
    # compile, but not a recompile; `causes` says what it is (info).
    first_of_program: bool = False

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(str(c.kind) for c in self.causes))

    @property
    def expected(self) -> bool:
        """Every cause is an expected change (warm-up: optimizer state created on the first
        steps): nothing for the user to fix. Unexplained recompiles are never expected."""
        return bool(self.causes) and all(c.info for c in self.causes)
