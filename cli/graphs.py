"""`xlagraph graphs SRC`: the graphs of a source and how many really differ."""

from __future__ import annotations

import click

from ._common import Status, echo, graphml_option, handle_errors, json_option, write_file


@click.command("graphs")
@click.argument("src", metavar="SRC")
@json_option
@graphml_option
@handle_errors
def graphs_command(src: str, as_json: bool, graphml_out: str | None) -> None:
    """List the graphs in SRC with their canonical fingerprints, grouped into variants.

    SRC is an HLO or lazy-IR file, an XLA_SAVE_TENSORS_FILE dump or a --xla_dump_to
    directory. Graphs with the same fingerprint share a variant letter (A, B, ...); every
    variant after the first is a recompile. Pass `SRC#K` (K the index) to `xlagraph diff`.

    A folder of per-rank dumps (save files `save.hlo.0`, `save.hlo.1`, ... or `rank0/`,
    `rank1/`, ... --xla_dump_to folders) gives the rank view: which rank ran which graph at each
    step, and where ranks diverge.

    With --graphml OUT, SRC names one graph (PATH, or PATH#K of a multi-graph source) and it is
    written to OUT as GraphML instead of being listed; `xlagraph diff A B --graphml OUT` writes
    two graphs with their differing instructions marked.

    \b
    Example:
        xlagraph graphs save.hlo.txt
        xlagraph graphs /tmp/xla_dump --json
        xlagraph graphs save.hlo.txt#2 --graphml step2.graphml
    """
    from xlagraph import api  # here, not at the top: keeps `--help` fast

    if graphml_out:
        if as_json:
            raise click.UsageError("--graphml writes one graph: leave out --json")
        with Status() as status:
            status.set(f"reading {src}")
            text = api.load(src).to_graphml()
        write_file(graphml_out, text)
        return
    if _rank_view(src, as_json):
        return
    with Status() as status:
        status.set(f"reading {src}")
        listing = api.graphs(src, progress=status.progress)
    if as_json:
        click.echo(listing.to_json())
    else:
        echo(listing.to_text(), nl=False)


def _rank_view(src: str, as_json: bool) -> bool:
    """Print the rank view when SRC is a folder of per-rank dumps; False when it is not one."""
    from xlagraph import api

    view = api.ranks(src)
    if view is None:
        return False
    if as_json:
        click.echo(view.to_json())
    else:
        echo(view.to_text(), nl=False)
    return True
