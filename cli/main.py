"""The `xlagraph` command group. Commands live in their own modules; this file only wires them.

Nothing here (or in any command) imports torch: xlagraph reads dumps, it does not capture them.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping
from typing import NoReturn

import click

from xlagraph.errors import XlagraphWarning

from . import _common
from ._common import finish_output, output_failed

__all__ = ["entry", "main", "xlagraph"]


class _Commands(Mapping[str, click.Command]):
    """The commands by name, each one's module imported when it is first looked up (the command
    run, or all of them for `--help`): `xlagraph graphs` compiles and loads no other command's code
    (issue 39's start-up). click's group reads it as its `commands`, suggestions included."""

    NAMES = ("check", "diff", "diverge", "graphs", "report", "run", "watch")  # module cli/<name>.py

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.NAMES:
            raise KeyError(name)
        from importlib import import_module

        command: click.Command = getattr(import_module(f".{name}", __package__), f"{name}_command")
        return command

    def __iter__(self) -> Iterator[str]:
        return iter(self.NAMES)

    def __len__(self) -> int:
        return len(self.NAMES)


@click.group(commands=_Commands(), context_settings={"help_option_names": ["-h", "--help"]})
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
