"""The `xlagraph` command group. Commands live in their own modules; this file only wires them.

Nothing here (or in any command) imports torch: xlagraph reads dumps, it does not capture them.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import warnings
from typing import NoReturn

import click

from xlagraph.errors import XlagraphWarning

from . import _common
from ._common import finish_output, output_failed
from .check import check_command
from .diff import diff_command
from .diverge import diverge_command
from .graphs import graphs_command
from .report import report_command
from .run import run_command
from .watch import watch_command

__all__ = ["entry", "main", "xlagraph"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="xlagraph", prog_name="xlagraph")
def xlagraph() -> None:
    """Why did my PyTorch/XLA step recompile? Explain, compare and list HLO graphs.

    \b
    xlagraph report SRC                 explain every recompile of a run
    xlagraph graphs SRC                 list the graphs of a dump, count the unique ones
    xlagraph diff A B                   name what differs between two graphs
    xlagraph check SRC --max-graphs N   fail CI when a run compiles too many graphs
    xlagraph watch DIR                  tell each recompile while the run writes its capture
    xlagraph run --out DIR -- CMD ...   run a script under capture
    """


xlagraph.add_command(diff_command)
xlagraph.add_command(graphs_command)
xlagraph.add_command(report_command)
xlagraph.add_command(check_command)
xlagraph.add_command(run_command)
xlagraph.add_command(diverge_command)
xlagraph.add_command(watch_command)


def main() -> None:
    code: int | str | None = 0
    warnings.showwarning = _one_line_warning
    try:
        xlagraph(prog_name="xlagraph")
    except SystemExit as e:
        code = e.code
    except OSError as e:  # writing --help or a usage message, outside any command
        code = output_failed(e)
    except Exception as e:  # a bug of ours: one line, not a traceback (XLAGRAPH_TRACEBACK=1 shows it)
        if os.environ.get("XLAGRAPH_TRACEBACK", "") not in ("", "0"):
            raise
        args = " ".join(sys.argv[1:])
        click.echo(
            f"xlagraph: internal error ({type(e).__name__}: {e}) on `xlagraph {args}`: a bug in xlagraph, "
            "please report it with this input (XLAGRAPH_TRACEBACK=1 shows where)",
            err=True,
        )
        code = 2
    sys.exit(finish_output(code))


def entry() -> NoReturn:
    """The installed command (and `python -m xlagraph.cli.main`): `main()`, then the process ends
    without tearing down what the command built. Freeing a large diff's objects one by one at
    interpreter exit cost about 0.9 CPU-s of a 600K-instruction pair's 10; the system reclaims
    the memory at once. Exit handlers still run, in the order Python would run them."""
    _common.ONE_COMMAND_PROCESS = True
    try:
        main()
        code: int | str | None = 0
    except SystemExit as e:
        code = e.code
    if isinstance(code, str):  # what `sys.exit(message)` does: the message, status 1
        click.echo(code, err=True)
        code = 1
    status = code if isinstance(code, int) else (0 if code is None else 1)
    for thread in threading.enumerate():  # as at a normal exit: threads first, then handlers
        if not thread.daemon and thread is not threading.current_thread():
            thread.join()
    atexit._run_exitfuncs()  # (what a normal exit runs: none of xlagraph's commands registers one)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 1
    os._exit(status)


def _one_line_warning(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
    if issubclass(category, XlagraphWarning):
        click.echo(f"xlagraph: warning: {message}", err=True)
    else:
        click.echo(f"xlagraph: warning: {category.__name__}: {message}", err=True)


if __name__ == "__main__":
    entry()
