"""`xlagraph diverge A B` / `xlagraph diverge DIR`: where two runs (or the ranks of one) part."""

from __future__ import annotations

import click

from ._common import Status, UserError, echo, handle_errors, json_option
from ._html import html_option, write_page

EXIT_SAME = 0
EXIT_DIVERGED = 1


@click.command("diverge")
@click.argument("a", metavar="A")
@click.argument("b", metavar="[B]", required=False)
@click.option(
    "--rtol", type=float, default=None, metavar="R", help="Relative tolerance on each tensor's norm."
)
@click.option(
    "--atol", type=float, default=None, metavar="A", help="Absolute tolerance on each tensor's norm."
)
@json_option
@html_option
@handle_errors
def diverge_command(
    a: str, b: str | None, rtol: float | None, atol: float | None, as_json: bool, html_out: str | None
) -> None:
    """Find the first step and tensor where two runs stop being bit-exact.

    A and B are capture folders recorded with XLAGRAPH_CAPTURE=DIR XLAGRAPH_FINGERPRINTS=1
    (torch_xla, or plain PyTorch on CUDA/CPU). With one folder DIR of a multi-process run,
    compares the replicated tensors (gradients, optimizer state, parameters) across ranks.

    Bit-exact by default; --rtol/--atol compare each tensor's norm instead, and report the
    largest deviation.

    Exit status: 0 bit-exact or within tolerance, 1 diverged, 2 bad input.

    \b
    Example:
        xlagraph diverge run_a run_b
        xlagraph diverge run_a run_b --rtol 1e-5 --json
        xlagraph diverge ddp_capture --html drift.html
    """
    from xlagraph import api  # here, not at the top: `xlagraph --help` must not pay for the engine

    for name, value in (("--rtol", rtol), ("--atol", atol)):
        if value is not None and not value >= 0:
            raise UserError(f"{name} must be 0 or more, got {value}")
    with Status() as status:
        status.set(f"reading {a}" + (f" and {b}" if b else ""))
        result = api.diverge(a, b, rtol=rtol, atol=atol)
    if html_out:
        write_page(html_out, result.to_html(), err=as_json)
    if as_json:
        click.echo(result.to_json())
    elif not html_out:
        echo(result.to_text(), nl=False)
    click.get_current_context().exit(EXIT_DIVERGED if result.verdict == "diverged" else EXIT_SAME)
