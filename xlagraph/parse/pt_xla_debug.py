"""Read torch_xla's `PT_XLA_DEBUG_LEVEL` output (`PT_XLA_DEBUG_FILE` or stderr) into events (the
blocks it reads: docs/development.md, "Capture, inside"). Pure: no torch. The capture hook parses the
file incrementally (a block cut short by a read is returned as `rest` and completed by the next
read); the capture reader parses leftovers."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from xlagraph.ir import Frame
from xlagraph.source_paths import portable_path

__all__ = [
    "UNREPORTED_CAUSE",
    "Analysis",
    "ComputationHash",
    "Execution",
    "fold_executions",
    "parse_frame",
    "parse_pt_xla_debug",
]

_PREFIXES = {
    "Compilation Analysis: ": "compile",
    "Execution Analysis: ": "execute",
    "Unexpected Execution Analysis: ": "unexpected",
    "Post Compilation Analysis: ": "post",
}
_RULE = "=" * 20
_FRAME = re.compile(r"^(\S+) \((.*):([0-9]{1,9})\)$")
_HASH = re.compile(r"^Computation hash: ([0-9a-f]+)\s*$")


@dataclass(frozen=True)
class Analysis:
    """One `Compilation Analysis` (kind `compile`) or `Execution Analysis` (kind `execute`,
    `unexpected` for an execution inside `torch_xla.compile` that was not allowed) block."""

    kind: str
    cause: str
    graph_hash: str
    inputs: int = -1
    outputs: int = -1
    frames: tuple[Frame, ...] = ()
    frames_truncated: bool = False  # torch_xla cut the list at PT_XLA_DEBUG_MAX_FRAME
    graph_name: str = ""


@dataclass(frozen=True)
class ComputationHash:
    """`Computation hash: <hex>` after a compile: hash of the compiled HloModuleProto."""

    value: str


@dataclass(frozen=True)
class Execution:
    """A graph execution with the compile that preceded it, if any (see `fold_executions`)."""

    graph_hash: str
    compiled: bool
    cause: str
    frames: tuple[Frame, ...]
    inputs: int = -1
    outputs: int = -1
    graph_name: str = ""
    computation_hash: str = ""
    frames_truncated: bool = False


def parse_frame(text: str) -> Frame | None:
    """`fn (file:line)` (surrounding blanks allowed) -> Frame, None for anything else."""
    m = _FRAME.match(text.strip())
    return Frame(m.group(1), portable_path(m.group(2)), int(m.group(3))) if m else None


def parse_pt_xla_debug(text: str) -> tuple[list[Analysis | ComputationHash], str]:
    """Events in `text` in order, and the unconsumed tail: a block that has not ended yet.

    Blocks end with a `----` line then a `====` line; a block still open at the end of `text`
    is returned whole in `rest` (prepend it to the next read). Lines that belong to no block
    (the Post Compilation sizes, other output) are skipped.
    """
    events: list[Analysis | ComputationHash] = []
    lines = text.split("\n")
    # A text that does not end with a newline ends in a partial line: keep it for the next read.
    tail = lines.pop()
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        kind, body = _split_prefix(line)
        if kind is None:
            m = _HASH.match(line)
            if m:
                events.append(ComputationHash(m.group(1)))
            i += 1
            continue
        if not body.startswith(_RULE) or kind == "post":
            i += 1
            continue
        found = _block_end(lines, i + 1, line[: len(line) - len(body)])
        if found is None:
            return events, "\n".join([*lines[i:], tail])
        body_end, after = found
        events.append(_analysis(kind, [_split_prefix(x)[1] for x in lines[i + 1 : body_end]]))
        i = after
    return events, tail


def fold_executions(
    events: Iterable[Analysis | ComputationHash],
    pending: Analysis | None = None,
    executions_reported: bool = True,
) -> tuple[list[Execution], Analysis | None]:
    """Pair each compile with the execution of the graph it compiled.

    A compile is followed by the execution of the same graph hash; that execution is
    `compiled`. When torch_xla reports compiles only (PT_XLA_DEBUG_LEVEL=1, so
    `executions_reported` is False) every compile stands for its execution. A `Computation
    hash` with no compile before it is a graph compiled without an analysis block (see
    `_unreported_compile`); at level 1 it cannot be told from the hash of a reported one. `pending` is a
    compile whose execution has not been read yet; it is returned for the next call.
    """
    out: list[Execution] = []
    computation_hash = ""
    for ev in events:
        if isinstance(ev, ComputationHash):
            if pending is None and executions_reported:
                # A compile with no analysis block before its hash: a graph torch_xla compiled
                # and ran from C++ with no Python frame to blame, e.g. the inputs of an op
                # that falls back to the CPU (its compiled run prints no Execution Analysis either).
                out.append(_unreported_compile(ev.value))
            else:
                computation_hash = ev.value
        elif ev.kind == "compile":
            if pending is not None:  # a compile whose graph never ran (failed or cancelled)
                out.append(_execution(pending, True, computation_hash))
            pending, computation_hash = ev, ""
            if not executions_reported:
                out.append(_execution(ev, True, ""))
                pending = None
        else:
            compiled = pending is not None and pending.graph_hash == ev.graph_hash
            if pending is not None and not compiled:
                out.append(_execution(pending, True, computation_hash))
            cause = ev.cause if ev.kind == "execute" else f"unexpected execution: {ev.cause}"
            out.append(_execution(ev, compiled, computation_hash if compiled else "", cause))
            pending, computation_hash = None, ""
    return out, pending


UNREPORTED_CAUSE = (
    "compiled outside PT_XLA_DEBUG's analysis (a graph torch_xla ran from C++, e.g. for a CPU-fallback op)"
)


def _unreported_compile(computation_hash: str) -> Execution:
    """A compile torch_xla printed only the hash of: the hash of its module stands for the graph."""
    return Execution(
        graph_hash=computation_hash,
        compiled=True,
        cause=UNREPORTED_CAUSE,
        frames=(),
        computation_hash=computation_hash,
    )


def _execution(a: Analysis, compiled: bool, computation_hash: str, cause: str | None = None) -> Execution:
    return Execution(
        graph_hash=a.graph_hash,
        compiled=compiled,
        cause=a.cause if cause is None else cause,
        frames=a.frames,
        inputs=a.inputs,
        outputs=a.outputs,
        graph_name=a.graph_name,
        computation_hash=computation_hash,
        frames_truncated=a.frames_truncated,
    )


def _split_prefix(line: str) -> tuple[str | None, str]:
    for prefix, kind in _PREFIXES.items():
        if line.startswith(prefix):
            return kind, line[len(prefix) :]
    return None, line


def _block_end(lines: list[str], start: int, prefix: str) -> tuple[int, int] | None:
    """(end of the block's body, index after the block), None while the block is still open.

    The body ends at the `----` line; the block at the `====` line after it. A line without
    the prefix ends a malformed block where it stands.
    """
    for j in range(start, len(lines)):
        if not lines[j].startswith(prefix):
            return j, j
        if lines[j].startswith("-" * 20, len(prefix)):
            return (j, j + 2) if j + 1 < len(lines) else None
    return None


def _analysis(kind: str, body: list[str]) -> Analysis:
    cause = graph_hash = name = ""
    inputs = outputs = -1
    frames: list[Frame] = []
    truncated = False
    section = ""
    for raw in body:
        if not raw.startswith("  "):
            section = raw.strip()
            continue
        item = raw.strip()
        if section in ("Compilation Cause", "Execution Cause"):
            cause = f"{cause}; {item}" if cause else item
        elif section.startswith("Graph Info"):
            key, _, value = item.partition(": ")
            if key == "Graph Hash":
                graph_hash = value.strip()
            elif key == "Graph Name":
                name = value.strip()
            elif key == "Number of Graph Inputs":
                inputs = _count(value)
            elif key == "Number of Graph Outputs":
                outputs = _count(value)
        elif section.startswith("Python Frame"):
            frame = parse_frame(item)
            if frame is not None:
                frames.append(frame)
            elif item.startswith("...."):
                truncated = True
    return Analysis(kind, cause, graph_hash, inputs, outputs, tuple(frames), truncated, name)


def _count(value: str) -> int:
    """A count printed by torch_xla; -1 (unknown) for anything else, e.g. a cut-off line."""
    text = value.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else -1
