"""The `xlagraph` command group. Commands live in their own modules; this file only wires them.

Nothing here (or in any command) imports torch: xlagraph reads dumps, it does not capture them.
"""

from __future__ import annotations

import sys

import click

from ._common import finish_output, output_failed
from .check import check_command
from .diff import diff_command
from .diverge import diverge_command
from .graphs import graphs_command
from .report import report_command
from .run import run_command

__all__ = ["main", "xlagraph"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="xlagraph", prog_name="xlagraph")
def xlagraph() -> None:
    """Why did my PyTorch/XLA step recompile? Compare and list HLO graphs.

    \b
    xlagraph graphs SAVE_FILE      list the graphs of a dump and count the unique ones
    xlagraph diff A#I A#J          name what differs between two graphs
    """


xlagraph.add_command(diff_command)
xlagraph.add_command(graphs_command)
xlagraph.add_command(report_command)
xlagraph.add_command(check_command)
xlagraph.add_command(run_command)
xlagraph.add_command(diverge_command)


def main() -> None:
    code: int | str | None = 0
    try:
        xlagraph(prog_name="xlagraph")
    except SystemExit as e:
        code = e.code
    except OSError as e:  # writing --help or a usage message, outside any command
        code = output_failed(e)
    sys.exit(finish_output(code))


if __name__ == "__main__":
    main()
