"""`xlagraph check SRC --max-graphs N`: the CI gate against recompiles."""

from __future__ import annotations

import click

from ._common import Status, echo, handle_errors, json_option, run_option

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
    from xlagraph import api  # here, not at the top: keeps `--help` fast

    with Status() as status:
        status.set(f"reading {src}")
        result = api.check(src, max_graphs, after_step, run, phase=status.set)
    if as_json:
        click.echo(result.to_json())
    else:
        echo(result.to_text(), nl=False)
    click.get_current_context().exit(EXIT_PASS if result.passed else EXIT_FAIL)
