"""`report`, `check` and `graphs`: whole runs and whole sources, as the CLI shows them.

`Report` holds one `RunReport` per process (`xlagraph.report.model`: compiles, timeline,
recompiles with their baseline, causes and attribution, rankings by call site and cause), the
rank view of a multi-process run, and which runs a capture folder holds. Its `to_json()`,
`to_text()` and `to_html()` are what `xlagraph report` prints or writes; `Check` likewise for
`xlagraph check`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from xlagraph.errors import InputError, reading

if TYPE_CHECKING:
    from xlagraph.api._diff import Diff
    from xlagraph.diff import DiffResult
    from xlagraph.report.load import Loaded, RunInfo
    from xlagraph.report.model import CheckResult, Recompile, RunReport, TimelineEntry
    from xlagraph.report.ranks import RankView
    from xlagraph.runlog import RunLog

__all__ = ["Check", "Report", "check", "latest_run_logs", "report", "run_choice", "runs_to_json"]

Phase = Callable[[str], None]


def _quiet(phase: str) -> None:
    pass


@dataclass(frozen=True, eq=False)
class Report:
    """Every compile of a run and why each one after the first happened.

    `processes` has one `RunReport` per process (one for a save file); `ranks` compares the
    processes of a multi-process run step by step (None otherwise); `runs` lists the runs a
    capture folder holds and `runs_note` says which one this is when there are several;
    `mark_sharding` the `xs.mark_sharding` calls behind each recompile, per process.
    """

    source: str
    processes: tuple[RunReport, ...]
    ranks: RankView | None
    runs: tuple[RunInfo, ...]
    runs_note: str
    mark_sharding: tuple[tuple[str, tuple[tuple[int, str], ...]], ...] = field(repr=False)

    @property
    def compiles(self) -> int:
        """Distinct graphs compiled, all processes together."""
        return sum(p.compiles for p in self.processes)

    @property
    def recompiles(self) -> tuple[Recompile, ...]:
        """Every recompile, process by process, in run order."""
        return tuple(r for p in self.processes for r in p.recompiles)

    @property
    def timeline(self) -> tuple[TimelineEntry, ...]:
        """The syncs of the first process (the only one of most runs), in order."""
        return self.processes[0].timeline if self.processes else ()

    def diff(self, recompile: Recompile) -> Diff:
        """The diff of `recompile` against its baseline, read again from the HLO the run kept
        (what the report page shows under each recompile). InputError when it kept none."""
        from xlagraph.api._diff import diff

        process = next((p for p in self.processes if recompile in p.recompiles), None)
        if process is None or recompile.baseline is None:
            what = f"sync {recompile.sync} is not a recompile with a baseline in this report"
            raise InputError(self.source, what)
        modules = {v.letter: v.module for v in process.variants}
        a, b = modules.get(recompile.baseline.variant, ""), modules.get(recompile.variant, "")
        if not (a and b):
            what = f"the HLO of graph {recompile.variant} or its baseline was not kept"
            raise InputError(self.source, what)
        return diff(a, b)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `xlagraph report --json` as a dict."""
        from xlagraph.render.ranks_text import rank_view_to_json, shardings_to_json
        from xlagraph.render.report_json import report_to_json

        data = report_to_json(self.processes)
        data["ranks"] = rank_view_to_json(self.ranks) if self.ranks is not None else None
        data["runs"], data["runs_note"] = runs_to_json(self.runs), self.runs_note
        data["mark_sharding"] = shardings_to_json(list(self.mark_sharding))
        return data

    def to_json(self) -> str:
        """Exactly what `xlagraph report --json` prints (without the final newline)."""
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self, note: bool = True) -> str:
        """Exactly what `xlagraph report` prints; `note=False` leaves out the line that says
        which run of several this is."""
        from xlagraph.render.ranks_text import render_ranks_text, render_shardings_text
        from xlagraph.render.report_text import render_report_text

        text = f"note: {self.runs_note}\n\n" if note and self.runs_note else ""
        text += render_report_text(self.processes)
        if sharded := render_shardings_text(list(self.mark_sharding)):
            text += "\n" + sharded
        if self.ranks is not None:
            text += "\n" + render_ranks_text(self.ranks)
        return text

    @cached_property
    def diffs(self) -> tuple[dict[int, DiffResult], ...]:
        """Per process, each recompile's `DiffResult` against its baseline by the recompile's
        sync: what the HTML page and the notebook view show (made once, on first use)."""
        from xlagraph.report.diffs import recompile_diffs

        with reading(self.source):  # each recompile's two graphs are read again
            return tuple(recompile_diffs(p) for p in self.processes)

    def to_html(self) -> str:
        """The self-contained page `xlagraph report --html` writes."""
        from xlagraph.render.html_report import render_report_html

        return render_report_html(self.processes, self.diffs, ranks=self.ranks)

    def __repr__(self) -> str:
        return self.to_text(note=False).split("\n\n", 1)[0]  # the first paragraph: what ran, how often

    def _repr_html_(self) -> str:
        from xlagraph.render.notebook import report_html

        return report_html(self.processes, self.diffs, self.ranks)


def runs_to_json(runs: tuple[RunInfo, ...]) -> list[dict[str, Any]]:
    return [
        {
            "run": r.number,
            "started": r.started,
            "start": r.start,
            "processes": list(r.processes),
            "selected": r.selected,
        }
        for r in runs
    ]


def latest_run_logs(loaded: Loaded) -> tuple[Any, ...]:
    """The processes of the latest selected run: ranks are compared within one run."""
    chosen = [r for r in loaded.runs if r.selected]
    if len(chosen) <= 1:
        return tuple(loaded.logs)
    names = set(chosen[-1].processes)
    return tuple(log for log in loaded.logs if log.process in names)


def run_choice(run: str | int) -> str | int:
    """`run` as `report` and `check` take it: "latest", "all" or a run number (1 is the oldest);
    ValueError names what is wrong."""
    from xlagraph.report.load import parse_run

    if isinstance(run, int) and not isinstance(run, bool):
        if run > 0:
            return run
        raise ValueError(f"run must be 'latest', 'all' or a run number (1 is the oldest), got {run}")
    return parse_run(str(run))


def report(capture_dir: str, run: str | int = "latest", *, phase: Phase = _quiet) -> Report:
    """Explain every recompile of a run: a capture folder (`XLAGRAPH_CAPTURE=DIR`), a folder of
    per-rank dumps, or an `XLA_SAVE_TENSORS_FILE` dump. `run` picks among the runs a capture
    folder holds: "latest", "all" or a number (1 is the oldest). `phase(text)` is told what is
    being done, for a progress display.

    >>> r = report("fixtures/torch_xla/kept_alive/save_hlo.txt")
    >>> r.compiles, [(x.variant, x.baseline.variant, x.kinds) for x in r.recompiles]
    (3, [('B', 'A', ('state_init', 'output_removed')), ('C', 'B', ('output_added',))])
    """
    from xlagraph.capture.shardings import read_mark_shardings, recompile_shardings
    from xlagraph.parse.shared import sharing
    from xlagraph.report import build_report
    from xlagraph.report.load import load_source
    from xlagraph.report.ranks import rank_view

    choice = run_choice(run)
    # The ranks of a pod hold the same files: each distinct content is parsed and diffed once.
    with reading(capture_dir), sharing():
        loaded = load_source(capture_dir, choice)
        phase("explaining recompiles")
        reports = _reports(loaded.logs, build_report)
        phase("comparing ranks")
        ranks = rank_view(latest_run_logs(loaded))
        marked = tuple(
            (r.process, recompile_shardings(r, read_mark_shardings(log.source)))
            for r, log in zip(reports, loaded.logs, strict=True)
            if log.kind == "capture"
        )
    return Report(capture_dir, reports, ranks, loaded.runs, loaded.runs_note, marked)


def _reports(logs: tuple[RunLog, ...], build: Callable[[RunLog], RunReport]) -> tuple[RunReport, ...]:
    """One report per process; with several, progress counts processes (`rank 412/1024`), not
    each one's recompiles."""
    if len(logs) < 2:
        from xlagraph.parse.shared import current

        if (shared := current()) is not None:
            shared.processes = len(logs)
        return tuple(build(log) for log in logs)
    from xlagraph.progress import shown, step
    from xlagraph.report.ranks import rank_of

    what = "rank" if all(rank_of(log) is not None for log in logs) else "process"
    out = []
    for k, log in enumerate(logs, 1):
        step(what, k, len(logs))
        with shown(None):
            out.append(build(log))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Check:
    """The CI gate's verdict: `passed` when every process compiled at most `max_graphs` graphs
    after warm-up and the ranks agree. `results` has one `CheckResult` per process."""

    source: str
    passed: bool
    results: tuple[CheckResult, ...]
    ranks: RankView | None
    runs: tuple[RunInfo, ...]
    runs_note: str
    replicas: Any = None  # xlagraph.diverge's drift of fingerprinted replicas, where it is there

    @property
    def drifted(self) -> bool:
        """The replicas of a fingerprinted multi-rank capture drifted apart."""
        return self.replicas is not None and self.replicas.verdict == "diverged"

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `xlagraph check --json` as a dict."""
        from xlagraph.render.ranks_text import rank_view_to_json
        from xlagraph.render.report_json import check_to_json

        data = check_to_json(self.results)
        data["ranks"] = rank_view_to_json(self.ranks) if self.ranks is not None else None
        data["runs"], data["runs_note"] = runs_to_json(self.runs), self.runs_note
        if self.ranks is not None and not self.ranks.agree:
            data["passed"] = False
        from xlagraph.render.diverge_json import divergence_to_json

        data["replicas"] = divergence_to_json(self.replicas) if self.replicas is not None else None
        if self.drifted:
            data["passed"] = False
        return data

    def to_json(self) -> str:
        """Exactly what `xlagraph check --json` prints (without the final newline)."""
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        """Exactly what `xlagraph check` prints."""
        from xlagraph.render.ranks_text import render_ranks_text
        from xlagraph.render.report_text import render_check_text

        text = f"note: {self.runs_note}\n" if self.runs_note else ""
        text += render_check_text(self.results)
        if self.ranks is not None and not self.ranks.agree:
            text += "FAIL: ranks diverge\n" + render_ranks_text(self.ranks)
        if self.drifted:
            t = self.replicas.first[0]
            text += f"FAIL: replicas drift at step {t.step}, rank {t.rank}: {t.name} ({t.role})\n"
            text += f"  (xlagraph diverge {self.source} says more)\n"
        return text

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.to_text().rstrip("\n")


def check(
    src: str,
    max_graphs: int | None,
    after_step: int | None = None,
    run: str | int = "latest",
    *,
    phase: Phase = _quiet,
    max_recompiles: int | None = None,
    no_graph_breaks: bool = False,
) -> Check:
    """The CI gate: did the run (what `report` reads) compile at most `max_graphs` distinct graphs
    after step `after_step` (steps 0..after_step are warm-up; None: every graph counts), with
    every rank running the same graphs?

    >>> result = check("fixtures/torch_xla/kept_alive/save_hlo.txt", max_graphs=1, after_step=1)
    >>> result.passed, result.results[0].explanation
    (True, 'ok: 1 graph compiled after step 1, at most 1 allowed')
    """
    from xlagraph.parse.shared import sharing
    from xlagraph.report import check_run
    from xlagraph.report.load import load_source
    from xlagraph.report.ranks import rank_view

    if (max_graphs is not None and max_graphs < 0) or (after_step is not None and after_step < 0):
        raise ValueError("max_graphs and after_step must be 0 or more")
    if max_graphs is None and max_recompiles is None and not no_graph_breaks:
        raise ValueError("check needs max_graphs, max_recompiles or no_graph_breaks")
    choice = run_choice(run)
    with reading(src), sharing():  # a pod's ranks hold the same tensor reports: each read once
        loaded = load_source(src, choice)
        phase("counting graphs")
        results = tuple(
            check_run(
                log, max_graphs, after_step, max_recompiles=max_recompiles, no_graph_breaks=no_graph_breaks
            )
            for log in loaded.logs
        )
        ranks = rank_view(latest_run_logs(loaded))
        drift = _replica_drift(src)
    drifted = drift is not None and drift.verdict == "diverged"
    passed = all(r.passed for r in results) and (ranks is None or ranks.agree) and not drifted
    return Check(src, passed, results, ranks, loaded.runs, loaded.runs_note, drift)


def _replica_drift(src: str) -> Any:
    """Fingerprints of several ranks: the gate also fails when replicas drift apart."""
    from xlagraph.diverge import replica_drift

    return replica_drift(src)
