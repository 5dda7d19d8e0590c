"""`xlagraph report SRC`: every compile of a run, and why each one after the first happened."""

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
from ._html import html_option, write_page


@click.command("report")
@click.argument("src", metavar="SRC")
@run_option
@json_option
@html_option
@click.option("--quiet", "-q", is_flag=True, help="Say nothing on stderr while working.")
@handle_errors
def report_command(src: str, run: str | int, as_json: bool, html_out: str | None, quiet: bool) -> None:
    """Explain every recompile of a run: which graphs compiled at which steps, against which
    earlier graph each one differs, what changed and which line of your code caused it.

    SRC is a capture folder (XLAGRAPH_CAPTURE=DIR or `xlagraph run --out DIR`) or a plain
    XLA_SAVE_TENSORS_FILE dump (XLA_SAVE_TENSORS_FMT=hlo or text; the file torch_xla writes is
    `<name>.0`). With --json the schema is documented in the README. A capture folder used again
    by later runs holds them all: the latest is reported unless --run says otherwise, and the
    output names every run found.

    \b
    Example:
        xlagraph report /tmp/capture
        xlagraph report save.hlo.0 --json
        xlagraph report /tmp/capture --html run.html
    """
    from xlagraph.capture.shardings import read_mark_shardings, recompile_shardings
    from xlagraph.progress import status_line
    from xlagraph.render.html import render_report_html  # here, not at the top: keeps `--help` fast
    from xlagraph.render.ranks_text import (
        rank_view_to_json,
        render_ranks_text,
        render_shardings_text,
        shardings_to_json,
    )
    from xlagraph.render.report_json import report_to_json
    from xlagraph.render.report_text import render_report_text
    from xlagraph.report import build_report
    from xlagraph.report.load import load_source
    from xlagraph.report.ranks import rank_view

    with status_line(Status, quiet) as status:
        status.set(f"reading {src}")
        with reading(src):
            loaded = load_source(src, run)
            logs = loaded.logs
            status.set("explaining recompiles")
            reports = tuple(build_report(log) for log in logs)
            status.set("comparing ranks")
            ranks = rank_view(latest_run_logs(loaded))
            marked = [
                (r.process, recompile_shardings(r, read_mark_shardings(log.source)))
                for r, log in zip(reports, logs, strict=True)
                if log.kind == "capture"
            ]
            if html_out:
                status.set("writing the page")
                page = render_report_html(reports, ranks=ranks)
    if as_json:
        data = report_to_json(reports)
        data["ranks"] = rank_view_to_json(ranks) if ranks is not None else None
        data["runs"], data["runs_note"] = runs_to_json(loaded), loaded.runs_note
        data["mark_sharding"] = shardings_to_json(marked)
        click.echo(json.dumps(data, indent=2))
    elif loaded.runs_note:  # said before the text report or the page's path
        echo(f"note: {loaded.runs_note}\n")
    if not as_json and not html_out:
        echo(render_report_text(reports), nl=False)
        if sharded := render_shardings_text(marked):
            echo("\n" + sharded, nl=False)
        if ranks is not None:
            echo("\n" + render_ranks_text(ranks), nl=False)
    if html_out:
        write_page(html_out, page, err=as_json)
