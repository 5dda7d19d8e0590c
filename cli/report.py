"""`xlagraph report SRC`: every compile of a run, and why each one after the first happened."""

from __future__ import annotations

import click

from ._common import Status, collect_no_garbage, echo, handle_errors, json_option, run_option
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
    XLA_SAVE_TENSORS_FILE dump (XLA_SAVE_TENSORS_FMT=hlo, text or stablehlo; the file torch_xla
    writes is `<name>.0`). With --json the schema is documented in the README. A capture folder used again
    by later runs holds them all: the latest is reported unless --run says otherwise, and the
    output names every run found.

    \b
    Example:
        xlagraph report /tmp/capture
        xlagraph report save.hlo.0 --json
        xlagraph report /tmp/capture --html run.html
    """
    from xlagraph import api  # here, not at the top: keeps `--help` fast
    from xlagraph.progress import status_line

    # What the report builds lives until the process ends; with the collector on, its pause over
    # the recompiles ended in one collection of everything the parent read meanwhile, after the
    # workers: ~0.1 CPU-s on the serial tail of the 20-variant report.
    collect_no_garbage()

    with status_line(Status, quiet) as status:
        status.set(f"reading {src}")
        result = api.report(src, run, phase=status.set)
        if html_out:
            status.set("writing the page")
            page = result.to_html()
    if as_json:
        click.echo(result.to_json())
    elif result.runs_note:  # said before the text report or the page's path
        echo(f"note: {result.runs_note}\n")
    if not as_json and not html_out:
        echo(result.to_text(note=False), nl=False)
    if html_out:
        write_page(html_out, page, err=as_json)
