"""`xlagraph run --out DIR -- python train.py ...`: run a command with capture on, then summarize."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click

from ._common import UserError, echo, handle_errors


@click.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--out", "out", required=True, metavar="DIR", help="Capture folder to write (one subfolder per process)."
)
@click.option("--overwrite", is_flag=True, help="Remove earlier captures in DIR first.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@handle_errors
def run_command(out: str, overwrite: bool, command: tuple[str, ...]) -> None:
    """Run COMMAND with XLAGRAPH_CAPTURE=DIR and print what it compiled.

    The command's Python must have xlagraph installed: its start-up hook does the capture (the
    same as `XLAGRAPH_CAPTURE=DIR python train.py`). The command's output streams through and
    its exit status is xlagraph's.

    \b
    Example:
        xlagraph run --out /tmp/cap -- python train.py --epochs 1
        xlagraph report /tmp/cap
    """
    import signal  # here, not at the top: every other command starts without them
    import subprocess

    directory = Path(out).resolve()
    _prepare(directory, overwrite)
    env = {**os.environ, "XLAGRAPH_CAPTURE": str(directory)}
    try:
        proc = subprocess.Popen(list(command), env=env)
    except OSError as e:
        raise UserError(f"{command[0]}: cannot run: {e.strerror or e}") from None
    try:
        code = proc.wait()
    except KeyboardInterrupt:  # the child got the same Ctrl-C; let it finish writing
        proc.send_signal(signal.SIGINT)
        code = proc.wait()
    echo(_summary(directory), err=True)
    sys.exit(code if code >= 0 else 128 - code)


def _prepare(directory: Path, overwrite: bool) -> None:
    if directory.exists() and not directory.is_dir():
        raise UserError(f"{directory}: exists and is not a folder")
    from xlagraph.api import process_folders

    earlier = process_folders(directory)
    if earlier and not overwrite:
        raise UserError(f"{directory}: holds an earlier capture; pass --overwrite or choose another --out")
    for p in earlier:
        shutil.rmtree(p)
    directory.mkdir(parents=True, exist_ok=True)


def _summary(directory: Path) -> str:
    from xlagraph.api import captured
    from xlagraph.errors import XlagraphError

    try:
        got = captured(directory)
    except XlagraphError:
        return (
            f"xlagraph: nothing captured in {directory}: the command never imported torch_xla, or its "
            "Python does not have xlagraph installed"
        )
    procs = f"{got.processes} process{'es' if got.processes != 1 else ''}"
    return (
        f"xlagraph: captured {procs}, {got.steps} steps, {got.compiles} compiles of {got.graphs} graphs "
        f"in {directory}; "
        f"explain them with: xlagraph report {directory}"
    )
