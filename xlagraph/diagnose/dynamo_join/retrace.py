"""What the dynamo joins read of torch.compile's half: each retrace's first failed guard in the
user's words, and how a graph of a retrace is told by one cause. Immutable data."""

from __future__ import annotations

from dataclasses import dataclass, replace

from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.recompile import Attribution, Recompile

__all__ = ["BRIDGE_CODE", "GuardFailure", "Retrace", "with_one_cause"]

# Where the openxla bridge's frames are (a sync it makes, the work it feeds an optimizer).
BRIDGE_CODE = "torch_xla/_dynamo/"


@dataclass(frozen=True)
class GuardFailure:
    """One of dynamo's guard failures in the user's words (`diagnose/guards.py`): `phrase` says it,
    `text` is dynamo's own, `at` the user's line that read the value (where dynamo names it),
    `origin` the line that computed it (`diagnose/value_origin.py`)."""

    kind: str
    phrase: str
    text: str
    at: str = ""
    source: str = ""
    entry: str = ""
    fix: str = ""
    origin: str = ""  # the user's line that computed the value (before the call), where found
    origin_source: str = ""  # its code


@dataclass(frozen=True)
class Retrace:
    """A torch.compile recompile of a frame that names a failed guard (the graphs it compiled say
    its id in `Recompile.dynamo`): the first failure (what changed since the last compile), the
    frame's function and call site, and whether it is expected (another mode's first compile)."""

    guard: GuardFailure
    function: str
    call_site: str
    expected: bool
    # The graph breaks this compile hit, and those the frame's compile before it hit ("reason at
    # line"): a retrace that hits other breaks moves work between its graphs and the lazy ones.
    breaks: tuple[str, ...] = ()
    breaks_before: tuple[str, ...] = ()
    # The inputs dynamo's graph of this compile reads beyond those of the cache entry whose guard
    # failed (fewer: negative; 0 where either count is unknown): a list's tensors passed in.
    inputs_added: int = 0


def with_one_cause(
    r: Recompile, causes: tuple[Cause, ...], lines: tuple[str, ...], all_lines: tuple[str, ...]
) -> Recompile:
    """`r` told by one cause (`causes[0]`, which the attribution cites at `lines`; any info causes
    after it) in place of the causes its diff named, which stay readable as a note: "against graph
    B: kinds", so the reader can still see what differed."""
    note = f"against graph {r.baseline.variant}: {', '.join(r.kinds)}" if r.baseline else ""
    return replace(
        r,
        causes=causes,
        attribution=(Attribution(0, str(causes[0].kind), causes[0].summary, lines=lines),),
        lines=all_lines,
        note="; ".join(x for x in (r.note, note) if x),
    )
