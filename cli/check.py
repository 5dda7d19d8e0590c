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
    default=None,
    metavar="N",
    help="Most distinct graphs allowed to compile (after step K when --after-step is given).",
)
@click.option(
    "--max-recompiles",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Most torch.compile recompiles allowed (after step K with --after-step); a mode "
    "(train/eval) compiled once each is expected and not counted.",
)
@click.option(
    "--no-graph-breaks",
    is_flag=True,
    default=False,
    help="Fail on any torch.compile graph break.",
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
def check_command(
    src: str,
    max_graphs: int | None,
    max_recompiles: int | None,
    no_graph_breaks: bool,
    after_step: int | None,
    run: str | int,
    as_json: bool,
) -> None:
    """Fail when a run compiled more distinct graphs than allowed: the CI gate for recompiles.

    SRC is what `xlagraph report` reads: a capture folder or an XLA_SAVE_TENSORS_FILE dump.
    Every process of a multi-process capture is checked; one over budget fails the check, and
    so do ranks that ran different graphs at some step (the rank view says where). A capture
    folder used again by later runs holds them all: the latest is judged unless --run says
    otherwise, and the output names every run found.

    For torch.compile runs (a capture, or a TORCH_TRACE folder), --max-recompiles and
    --no-graph-breaks gate dynamo's recompiles and graph breaks, each named with its guard and line.
    At least one of --max-graphs, --max-recompiles and --no-graph-breaks is needed.

    Exit status: 0 within budget, 1 over budget (the extra graphs and their causes are named),
    2 bad input.

    \b
    Example:
        xlagraph check /tmp/capture --max-graphs 2
        xlagraph check save.hlo.0 --max-graphs 0 --after-step 1
        xlagraph check /tmp/capture --max-recompiles 0 --no-graph-breaks
    """
    from xlagraph import api  # here, not at the top: keeps `--help` fast

    if max_graphs is None and max_recompiles is None and not no_graph_breaks:
        raise click.UsageError("give --max-graphs, --max-recompiles or --no-graph-breaks")
    with Status() as status:
        status.set(f"reading {src}")
        result = api.check(
            src,
            max_graphs,
            after_step,
            run,
            phase=status.set,
            max_recompiles=max_recompiles,
            no_graph_breaks=no_graph_breaks,
        )
    if as_json:
        click.echo(result.to_json())
    else:
        echo(result.to_text(), nl=False)
    click.get_current_context().exit(EXIT_PASS if result.passed else EXIT_FAIL)
