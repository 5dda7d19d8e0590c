"""What torch.compile's dynamo did in a run: each frame it compiled, why it compiled again, where
it broke the graph. Backend-agnostic (openxla, inductor, aot_eager, a plugin's): read from torch's
structured trace (`xlagraph.parse.torch_trace`), a capture's `torch_trace.log` or a user's own
`TORCH_TRACE` folder. Immutable data; `report/dynamo.py` says it, `diagnose/dynamo_join` joins it to
the XLA graphs.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlagraph.ir import Frame

__all__ = ["DynamoCompile", "DynamoLog", "GraphBreak"]


@dataclass(frozen=True)
class GraphBreak:
    """One graph break dynamo logged: its reason (dynamo's first line), the user line it broke at,
    and the user's stack (innermost first)."""

    compile_id: str
    reason: str
    file: str
    line: int
    explanation: str = ""
    stack: tuple[Frame, ...] = ()

    @property
    def at(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""


@dataclass(frozen=True)
class DynamoCompile:
    """One compile of one frame (`compile_id` "F/N": frame F's N-th compile; N > 0 is a recompile).

    `function`/`file`/`line` are the code object dynamo compiled; `call_stack` the user's frames that
    called it (innermost first). `guard_failures` are dynamo's own texts (`tensor 'x' size mismatch at
    index 0. expected 8, actual 11`), one per cache entry that failed, as TORCH_LOGS=recompiles prints
    them. `seconds` is dynamo's whole compile of the frame, `backend_seconds` the backend's part.
    `fail_type`/`fail_reason` say why a compile gave up (the recompile limit: the frame then runs
    eagerly). `step`/`t` place it in a capture's journal (None for a plain TORCH_TRACE)."""

    compile_id: str
    frame_id: int
    frame_compile_id: int
    function: str
    file: str
    line: int
    call_stack: tuple[Frame, ...] = ()
    guard_failures: tuple[str, ...] = ()
    graph_breaks: tuple[GraphBreak, ...] = ()
    seconds: float = 0.0
    backend_seconds: float = 0.0
    graph_ops: int | None = None
    graph_inputs: int | None = None  # the inputs of the graph dynamo built (`graph_input_count`)
    fail_type: str = ""
    fail_reason: str = ""
    step: int | None = None
    t: float | None = None
    end_step: int | None = None  # the step when the compile ended
    sync: int | None = None  # in a capture: the first sync of the step it began in
    backward_seconds: float = 0.0  # aot_autograd's backward, compiled at the first backward call

    @property
    def recompile(self) -> bool:
        return self.frame_compile_id > 0

    @property
    def code(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""

    @property
    def hit_limit(self) -> bool:
        """Dynamo gave up on this frame: it runs eagerly from here on (`recompile_limit`)."""
        return (
            "RecompileLimitExceeded" in self.fail_type
            or "recompile_limit" in self.fail_reason
            or ("cache limit" in self.fail_reason.lower())
        )


@dataclass(frozen=True)
class DynamoLog:
    """Dynamo's record of one process. `notes` say what the source lacked or how it was cut."""

    source: str
    compiles: tuple[DynamoCompile, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def recompiles(self) -> tuple[DynamoCompile, ...]:
        return tuple(c for c in self.compiles if c.recompile)

    @property
    def graph_breaks(self) -> tuple[GraphBreak, ...]:
        return tuple(b for c in self.compiles for b in c.graph_breaks)
