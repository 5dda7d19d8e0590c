"""Did both sides compile and execute the same graphs up to the divergent step? From the capture
journals; where they did not, the graph diff of that step with its causes (`xlagraph.diff`): a
different graph explains a different value.
"""

from __future__ import annotations

from xlagraph.diverge.load import FpRun
from xlagraph.diverge.model import GraphCheck
from xlagraph.errors import XlagraphError

__all__ = ["check_graphs"]

MAX_CAUSES = 5


def check_graphs(a: FpRun, b: FpRun, step: int | None) -> GraphCheck:
    """Compare the graphs both processes ran in journal steps 0 .. the journal step of
    fingerprint step `step` (all steps when None)."""
    if not a.has_journal and not b.has_journal:
        return GraphCheck(True, note="no graphs on either side (eager PyTorch): nothing compiled")
    if not (a.has_journal and b.has_journal):
        return GraphCheck(None, note="only one side has a capture journal: graphs not compared")
    from xlagraph.capture.reader import read_capture

    try:
        log_a, log_b = _one(read_capture(a.path)), _one(read_capture(b.path))
    except XlagraphError as e:
        return GraphCheck(None, note=f"journal unreadable: {e}")
    if log_a is None or log_b is None:
        return GraphCheck(None, note="a journal holds no graph: graphs not compared")
    upto = _journal_step(a, b, step)
    seq_a, seq_b = _by_step(log_a, upto), _by_step(log_b, upto)
    for js in range(max(len(seq_a), len(seq_b))):
        ha = seq_a[js] if js < len(seq_a) else ()
        hb = seq_b[js] if js < len(seq_b) else ()
        if ha == hb:
            continue
        i = next((i for i, (x, y) in enumerate(zip(ha, hb, strict=False)) if x != y), min(len(ha), len(hb)))
        if i >= len(ha) or i >= len(hb):
            extra = "A" if len(ha) > len(hb) else "B"
            return GraphCheck(
                False, js, i, note=f"journal step {js}: {extra} ran {abs(len(ha) - len(hb))} more graph(s)"
            )
        return _diff(log_a, log_b, js, i, ha[i], hb[i])
    return GraphCheck(True)


def _one(logs: list) -> object | None:
    return logs[0] if logs else None


def _journal_step(a: FpRun, b: FpRun, step: int | None) -> int | None:
    if step is None:
        return None
    found = [r.steps[step].journal_step for r in (a, b) if step < len(r.steps)]
    found = [j for j in found if j >= 0]
    return max(found) if found else None


def _by_step(log: object, upto: int | None) -> list[tuple[str, ...]]:
    steps: dict[int, list[str]] = {}
    for sync in log.syncs:  # type: ignore[attr-defined]
        if upto is None or sync.step <= upto:
            steps.setdefault(sync.step, []).append(sync.graph_hash)
    if not steps:
        return []
    return [tuple(steps.get(i, ())) for i in range(max(steps) + 1)]


def _diff(log_a: object, log_b: object, js: int, i: int, ha: str, hb: str) -> GraphCheck:
    ga, gb = log_a.graphs.get(ha), log_b.graphs.get(hb)  # type: ignore[attr-defined]
    causes: tuple[str, ...] = ()
    note = ""
    if ga is not None and gb is not None and ga.module and gb.module:
        try:
            from xlagraph.diff import diff_modules
            from xlagraph.parse.sources import load_module

            result = diff_modules(load_module(ga.module), load_module(gb.module))
            causes = tuple(f"{c.kind}: {c.summary}" for c in result.causes[:MAX_CAUSES])
            if not causes:
                note = f"the diff engine finds the graphs {result.verdict}"
        except (XlagraphError, RecursionError, MemoryError) as e:
            note = f"graph diff failed: {e}"
    else:
        note = "no HLO kept for one of the graphs: hashes only"
    return GraphCheck(False, js, i, ha, hb, causes, note)
