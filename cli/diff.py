"""`xlagraph diff A B`: why two graphs differ."""

from __future__ import annotations

import click

from ._common import (
    Status,
    collect_no_garbage,
    echo,
    graphml_option,
    handle_errors,
    json_option,
    write_file,
)
from ._html import html_option, write_page

EXIT_IDENTICAL = 0
EXIT_DIFFERENT = 1


@click.command("diff")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@json_option
@click.option(
    "--max-changes",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    metavar="N",
    help="List at most N entries per list (changes, moved inputs, instruction names); 0 lists all.",
)
@html_option
@graphml_option
@click.option("--quiet", "-q", is_flag=True, help="Say nothing on stderr while working.")
@handle_errors
def diff_command(
    a: str,
    b: str,
    as_json: bool,
    max_changes: int,
    html_out: str | None,
    graphml_out: str | None,
    quiet: bool,
) -> None:
    """Compare graph A with graph B and name what makes them differ.

    A and B are HLO text files, lazy-IR files, or one graph of a multi-graph source written
    PATH#K (0-based): an XLA_SAVE_TENSORS_FILE dump or a --xla_dump_to directory. `xlagraph
    graphs PATH` lists the graphs of a source.

    Two whole runs of different ranks (`save.hlo.0 save.hlo.3`, or two per-rank --xla_dump_to
    folders, without #K) are compared step by step instead: the rank view says where they
    diverge and which collective would not line up.

    With --graphml OUT, both graphs go into one GraphML file (nodes `A:...` and `B:...`), each
    instruction marked with its `status` (cause, only-A, only-B, changed, same) and its
    `counterpart` on the other side.

    Exit status: 0 identical, 1 different or undetermined (only values a dump elided
    could differ), 2 bad input.

    \b
    Example:
        xlagraph diff save.hlo.txt#0 save.hlo.txt#3
        xlagraph diff before.hlo after.hlo --json
        xlagraph diff before.hlo after.hlo --html diff.html
        xlagraph diff before.hlo after.hlo --graphml diff.graphml
    """
    from xlagraph import api  # here, not at the top: `xlagraph --help` must not pay for the engine

    collect_no_garbage()

    if not graphml_out and (agree := _ranks(a, b, as_json)) is not None:
        click.get_current_context().exit(EXIT_IDENTICAL if agree else EXIT_DIFFERENT)
    from xlagraph.progress import status_line

    with status_line(Status, quiet) as status:
        result = api.diff(a, b, phase=status.set)
    if as_json:
        click.echo(result.to_json())
    elif not html_out and not graphml_out:
        echo(result.to_text(max_changes=max_changes), nl=False)
    if html_out:
        write_page(html_out, result.to_html(), err=as_json)
    if graphml_out:
        write_file(graphml_out, result.to_graphml(), err=as_json)
    # `undetermined` (only values a dump elided could differ) is not shown identical: exit 1.
    code = EXIT_IDENTICAL if result.verdict == "identical" else EXIT_DIFFERENT
    click.get_current_context().exit(code)


def _ranks(a: str, b: str, as_json: bool) -> bool | None:
    """Compare two whole per-rank runs; None when A and B are not that (single graphs)."""
    from xlagraph import api

    view = api.ranks(a, b)
    if view is None:
        return None
    if as_json:
        click.echo(view.to_json())
    else:
        echo(view.to_text(), nl=False)
    return view.agree
