"""`xlagraph diff A B`: why two graphs differ."""

from __future__ import annotations

import json

import click

from ._common import Status, echo, graphml_option, handle_errors, json_option, reading, write_graphml
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
        from xlagraph.render.graphml import diff_graphml

        write_graphml(graphml_out, diff_graphml(result), err=as_json)
    # `undetermined` (only values a dump elided could differ) is not shown identical: exit 1.
    code = EXIT_IDENTICAL if result.verdict == "identical" else EXIT_DIFFERENT
    click.get_current_context().exit(code)


def _ranks(a: str, b: str, as_json: bool) -> bool | None:
    """Compare two whole per-rank runs; None when A and B are not that (single graphs)."""
    from xlagraph.report.ranks import given_rank, rank_sources, rank_view

    with reading(f"{a} vs {b}"):
        logs = rank_sources([a, b])
        view = rank_view(logs) if logs else None
    if view is None:
        return None
    from xlagraph.render.ranks_text import rank_view_to_json, render_ranks_text

    if as_json:
        click.echo(json.dumps({"kind": "ranks", "ranks": rank_view_to_json(view)}, indent=2))
    else:
        # Which argument is which rank: two runs' dump folders are numbered by their place.
        named = [(given_rank(log), spec) for log, spec in zip(logs, (a, b), strict=False)]
        echo("".join(f"rank {r}: {spec}\n" for r, spec in named if r is not None), nl=False)
        echo(render_ranks_text(view), nl=False)
    return view.agree
