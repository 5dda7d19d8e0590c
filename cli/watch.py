"""`xlagraph watch DIR`: a capture told while it is written, one line per recompile."""

from __future__ import annotations

import click

from ._common import echo, handle_errors, json_option


@click.command("watch")
@click.argument("capture_dir", metavar="DIR")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=0.5,
    show_default=True,
    metavar="S",
    help="Seconds between two looks at the folder.",
)
@click.option("--once", is_flag=True, default=False, help="Tell what is there now and exit; do not follow.")
@json_option
@handle_errors
def watch_command(capture_dir: str, interval: float, once: bool, as_json: bool) -> None:
    """Follow a capture while the run writes it: each recompile within a second of its compile, in
    the report's words (step, graph, cause, your line, the fix); "steady" once the warm-up is over;
    ranks that compiled a graph the others did not; the end of each process.

    DIR is what XLAGRAPH_CAPTURE names (one process or many: ranks, hosts on a shared folder). It
    reads only what is complete, so it works from another machine on a synced folder. On a
    finished capture it replays the run and exits: the same command before and after. It ends when
    every process has ended (or is gone from this host), or on Ctrl-C.

    Exit status: 0, or 2 for bad input.

    \b
    Example:
        XLAGRAPH_CAPTURE=/tmp/cap python train.py &
        xlagraph watch /tmp/cap
        xlagraph watch /tmp/cap --json | my-log-shipper
    """
    from xlagraph import api  # here, not at the top: keeps `--help` fast

    try:
        for event in api.watch(capture_dir, follow=not once, interval=interval):
            _whole(event.json if as_json else event.text)
    except KeyboardInterrupt:
        return


def _whole(line: str) -> None:
    """One line written and flushed with Ctrl-C held back until it is out: a long line to a pipe is
    written in chunks, and an interrupt between two of them cut it (a log shipper reads lines)."""
    import signal
    import sys

    block = getattr(signal, "pthread_sigmask", None)  # (POSIX; elsewhere a plain write)
    held = block(signal.SIG_BLOCK, {signal.SIGINT}) if block else None
    try:
        echo(line)
        sys.stdout.flush()
    finally:
        if block and held is not None:
            block(signal.SIG_SETMASK, held)
