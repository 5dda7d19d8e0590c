"""`xlagraph graphs SRC`: the graphs of a source and how many really differ."""

from __future__ import annotations

import json

import click

from ._common import Status, echo, handle_errors, json_option, reading


@click.command("graphs")
@click.argument("src", metavar="SRC")
@json_option
@handle_errors
def graphs_command(src: str, as_json: bool) -> None:
    """List the graphs in SRC with their canonical fingerprints, grouped into variants.

    SRC is an HLO or lazy-IR file, an XLA_SAVE_TENSORS_FILE dump or a --xla_dump_to
    directory. Graphs with the same fingerprint share a variant letter (A, B, ...); every
    variant after the first is a recompile. Pass `SRC#K` (K the index) to `xlagraph diff`.

    \b
    Example:
        xlagraph graphs save.hlo.txt
        xlagraph graphs /tmp/xla_dump --json
    """
    from xlagraph.graphs import list_graphs  # here, not at the top: keeps `--help` fast
    from xlagraph.render.json import graphs_to_json
    from xlagraph.render.text import render_graphs_text

    with Status() as status:
        status.set(f"reading {src}")
        with reading(src):
            listing = list_graphs(src, progress=status.progress)
    if as_json:
        click.echo(json.dumps(graphs_to_json(listing), indent=2))
    else:
        echo(render_graphs_text(listing), nl=False)
