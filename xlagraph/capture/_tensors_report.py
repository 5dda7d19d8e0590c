"""The live-tensor report (`_xla_tensors_report`): taken before a step marker while it stays cheap,
and kept only for a graph that marker compiled (why before, and which steps the budget goes to
first: docs/capture-settings.md, "The live-tensor report ... is expensive")."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from xlagraph.capture import files as fmt
from xlagraph.capture._holders import find_holders
from xlagraph.source_paths import is_library_path

if TYPE_CHECKING:
    from xlagraph.capture._host import Host
    from xlagraph.capture._settings import Settings
    from xlagraph.capture._state import GraphEntry, RunState
    from xlagraph.parse.pt_xla_debug import Execution

__all__ = ["attach_tensors", "settle_guess", "take_report"]

# The live-tensor report costs milliseconds even for a tiny model (6 – 25 ms for an MLP whose step
# takes 0.4 ms; 300 – 650 ms for a 2-layer transformer), far more than a steady step. It is taken:
ALWAYS_REPORT_MARKERS = 2  # before the first markers (warm-up compiles),
REPORT_BUDGET = 0.02  # while all reports so far cost at most this share of the run's wall time,
RECENT_COMPILE_MARKERS = 2  # or while graphs still change (a compile at one of the last markers)
# or before a marker whose step looks new (see above), while no more than this many reports taken
# for that reason alone found no compile (a loop whose counts keep changing without compiling),
MAX_WRONG_GUESSES = 8
REPORT_PER_COMPILE = 0.25  # ... if it costs at most this share of an average compile.
_COUNTERS = ("CreateXlaTensor", "DestroyXlaTensor")  # torch_xla's counters the guess reads
_MAX_SIGNATURES = 256  # distinct counts remembered (a stable loop has one or two)


def take_report(rec: Host, t: float) -> None:
    """Before a marker (at perf-counter time `t`): the report, or the reason there is none."""
    s = rec.s
    s.report, s.report_reason, s.holders, s.guessed = None, "", None, False
    s.looks_new = _looks_new(s, rec.xlac)
    if rec.settings.report_mode == "never":
        s.report_reason = "live-tensor report off (XLAGRAPH_TENSORS_REPORT=never)"
    elif _affordable(s, rec.settings, t - rec.t0):
        r0 = time.perf_counter()
        s.report = rec.xlac._xla_tensors_report(0, "")
        s.holders = _holders(rec)
        s.report_cost = time.perf_counter() - r0
        s.report_spent += s.report_cost
    else:
        s.report_reason = (
            f"live-tensor report skipped: it cost {s.report_cost * 1e3:.0f} ms per step "
            f"(taken while within {REPORT_BUDGET:.0%} of the run time, or while graphs change or "
            f"the step looks new and it costs under {REPORT_PER_COMPILE:.0%} of a compile); "
            "XLAGRAPH_TENSORS_REPORT=always forces it"
        )
        # What keeps tensors alive costs milliseconds where the report costs seconds (a large
        # model's report is seconds a step): taken on its own under the same budget, it still
        # names the outputs a graph added or dropped, by shape.
        if _affordable(s, rec.settings, t - rec.t0, s.holders_cost):
            h0 = time.perf_counter()
            s.holders = _holders(rec)
            s.holders_cost = time.perf_counter() - h0
            s.report_spent += s.holders_cost


def _affordable(s: RunState, settings: Settings, elapsed: float, cost: float | None = None) -> bool:
    """Whether to take the report (or what costs `cost`) now (the rules by the constants above);
    `s.guessed` says that only the step's new look allowed it."""
    cost = s.report_cost if cost is None else cost
    if settings.report_mode == "always" or s.markers <= ALWAYS_REPORT_MARKERS:
        return True
    if s.report_spent + cost <= REPORT_BUDGET * elapsed:
        return True
    mean_compile = s.compile_seconds / s.compile_count if s.compile_count else 0.0
    if cost > REPORT_PER_COMPILE * mean_compile:
        return False
    if s.markers - s.last_compile_marker <= RECENT_COMPILE_MARKERS:
        return True
    s.guessed = s.looks_new and s.wrong_guesses < MAX_WRONG_GUESSES
    return s.guessed


def _looks_new(s: RunState, xlac: Any) -> bool:
    """Before a marker: whether the tensors created and destroyed since the last one come in
    counts no earlier marker saw (a step of new code, likely to compile a new graph)."""
    counts = tuple(xlac._xla_counter_value(name) or 0 for name in _COUNTERS)
    signature = tuple(now - last for now, last in zip(counts, s.tensor_counts, strict=True))
    s.tensor_counts = counts
    if signature in s.signatures:
        return False
    if len(s.signatures) >= _MAX_SIGNATURES:
        s.signatures.clear()
    s.signatures.add(signature)
    return True


def settle_guess(s: RunState, compiled: bool) -> None:
    """After a marker: a report its new look alone bought and that explains no compile counts
    against further guesses."""
    if s.guessed and not compiled:
        s.wrong_guesses += 1
    s.guessed = False


_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # xlagraph's own frames


def _is_user_file(path: str) -> bool:
    return bool(path) and not path.startswith(_OWN) and not is_library_path(path)


def _holders(rec: Host) -> list[dict[str, Any]] | None:
    """What keeps each live tensor alive (`_holders`); None where the walk failed: it only adds
    to the report, so its failure must not cost the report itself."""
    get_id, info = rec.xlac._xla_get_tensor_id, rec.xlac._get_xla_tensor_debug_info
    torch = sys.modules["torch"]
    is_functional, unwrap = torch._is_functional_tensor, torch._from_functional_tensor

    def tensor_id(t: Any) -> int | None:
        # Asked of a functionalization wrapper, the id syncs it first: a view whose base was
        # updated in place (a gradient after clip_grad_norm_) gets an IR node of its own, and the
        # user's next graph an output more. The wrapped tensor is read as it stands, here and in
        # `pending`.
        return int(get_id(inner(t))) if t.device.type == "xla" else None

    def inner(t: Any) -> Any:
        return unwrap(t) if is_functional(t) else t

    def pending(t: Any) -> bool:  # no device data yet: an output of the coming graph (~2 us)
        return "XLAData: None" in info(inner(t))

    try:
        return find_holders(sys._getframe(1), _is_user_file, tensor_id, rec.paths, pending)
    except Exception as e:  # an object that resists reading: say so once, keep the report
        if not rec.s.holders_failed:
            rec.s.holders_failed = True
            rec.note(f"what keeps tensors alive not recorded: {type(e).__name__}: {e}")
        return None


def attach_tensors(rec: Host, compiled: list[tuple[GraphEntry, Execution, bool]]) -> None:
    """The compiled graphs of a step: the marker's report goes to its first compile; the others get a
    note saying why they have none."""
    s = rec.s
    report = s.report
    for graph, ex, own in compiled:
        if graph.has_tensors:
            continue
        if own and report is not None:
            if rec.fits(len(report)):
                name = f"{ex.graph_hash}.txt"
                with open(os.path.join(rec.tensors_dir, name), "w", encoding="utf-8") as f:
                    f.write(report)
                rec.kept(os.path.join(rec.tensors_dir, name))
                s.stored_bytes += len(report)
                graph.has_tensors = True
                update = {"tensors": f"{fmt.TENSORS_DIR}/{name}", "tensors_note": ""}
                update.update(_store_holders(rec, ex.graph_hash, s.holders))
            else:
                update = {"tensors_note": rec.cap_reason("live-tensor report")}
            report = None  # one report, for the marker's first compile
        elif own:
            update = {"tensors_note": s.report_reason or "no live-tensor report for this sync"}
            update.update(_store_holders(rec, ex.graph_hash, s.holders))
        else:
            update = {
                "tensors_note": f"compiled by an implicit sync ({ex.cause}): the live-tensor report "
                "is taken only before step markers"
            }
        rec.update(graph, **update)


def _store_holders(rec: Host, graph_hash: str, holders: list[dict[str, Any]] | None) -> dict[str, str]:
    """The holders beside the report they name tensors of: `tensors/<hash>.holders.json`."""
    if not holders:
        return {}
    text = json.dumps(holders, separators=(",", ":"), ensure_ascii=False)
    if not rec.fits(len(text)):
        return {}
    name = f"{graph_hash}{fmt.HOLDERS_SUFFIX}"
    with open(os.path.join(rec.tensors_dir, name), "w", encoding="utf-8") as f:
        f.write(text)
    rec.s.stored_bytes += len(text)
    return {"holders": f"{fmt.TENSORS_DIR}/{name}"}
