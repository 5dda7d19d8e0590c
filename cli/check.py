"""`xlagraph check SRC --max-graphs N`: the CI gate against recompiles."""

from __future__ import annotations

import json

import click

from ._common import (
    Status,
    echo,
    handle_errors,
    json_option,
    latest_run_logs,
    reading,
    run_option,
    runs_to_json,
)

EXIT_PASS = 0
EXIT_FAIL = 1


@click.command("check")
@click.argument("src", metavar="SRC")
@click.option(
    "--max-graphs",
    type=click.IntRange(min=0),
    required=True,
    metavar="N",
    help="Most distinct graphs allowed to compile (after step K when --after-step is given).",
)
@click.option(
    "--after-step",
    type=click.IntRange(min=0),
    default=None,
    metavar="K",
    help="Steps 0..K are warm-up: graphs first compiled there do not count (steps are 0-based).",
)
@run_option
@json_option
@handle_errors
def check_command(src: str, max_graphs: int, after_step: int | None, run: str | int, as_json: bool) -> None:
    """Fail when a run compiled more distinct graphs than allowed: the CI gate for recompiles.

    SRC is what `xlagraph report` reads: a capture folder or an XLA_SAVE_TENSORS_FILE dump.
    Every process of a multi-process capture is checked; one over budget fails the check, and
    so do ranks that ran different graphs at some step (the rank view says where). A capture
    folder used again by later runs holds them all: the latest is judged unless --run says
    otherwise, and the output names every run found.

    Exit status: 0 within budget, 1 over budget (the extra graphs and their causes are named),
    2 bad input.

    \b
    Example:
        xlagraph check /tmp/capture --max-graphs 2
        xlagraph check save.hlo.0 --max-graphs 0 --after-step 1
    """
    from xlagraph.diverge import replica_drift
    from xlagraph.render.diverge_json import divergence_to_json
    from xlagraph.render.ranks_text import rank_view_to_json, render_ranks_text  # here: fast `--help`
    from xlagraph.render.report_json import check_to_json
    from xlagraph.render.report_text import render_check_text
    from xlagraph.report import check_run
    from xlagraph.report.load import load_source
    from xlagraph.report.ranks import rank_view

    with Status() as status:
        status.set(f"reading {src}")
        with reading(src):
            loaded = load_source(src, run)
            logs = loaded.logs
            status.set("counting graphs")
            results = tuple(check_run(log, max_graphs, after_step) for log in logs)
            ranks = rank_view(latest_run_logs(loaded))
            drift = replica_drift(src)  # fingerprints of several ranks: replicas must not drift
    if as_json:
        data = check_to_json(results)
        data["ranks"] = rank_view_to_json(ranks) if ranks is not None else None
        data["runs"], data["runs_note"] = runs_to_json(loaded), loaded.runs_note
        if ranks is not None and not ranks.agree:
            data["passed"] = False
        data["replicas"] = divergence_to_json(drift) if drift is not None else None
        if drift is not None and drift.verdict == "diverged":
            data["passed"] = False
        click.echo(json.dumps(data, indent=2))
    else:
        if loaded.runs_note:
            echo(f"note: {loaded.runs_note}")
        echo(render_check_text(results), nl=False)
        if ranks is not None and not ranks.agree:
            echo("FAIL: ranks diverge\n" + render_ranks_text(ranks), nl=False)
        if drift is not None and drift.verdict == "diverged":
            t = drift.first[0]
            echo(f"FAIL: replicas drift at step {t.step}, rank {t.rank}: {t.name} ({t.role})")
            echo(f"  (xlagraph diverge {src} says more)")
    drifted = drift is not None and drift.verdict == "diverged"
    passed = all(r.passed for r in results) and (ranks is None or ranks.agree) and not drifted
    click.get_current_context().exit(EXIT_PASS if passed else EXIT_FAIL)
