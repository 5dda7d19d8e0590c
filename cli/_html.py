"""`--html OUT`, shared by the commands that can write a page: the option and the writing.

The library renders pages to text (`xlagraph.render.html_diff`, `html_report`); only this writes them to disk.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ._common import echo, write_file

__all__ = ["html_option", "write_page"]

F = TypeVar("F", bound=Callable[..., Any])


def html_option(fn: F) -> F:
    return click.option(
        "--html",
        "html_out",
        type=click.Path(dir_okay=False, writable=True),
        metavar="OUT",
        help="Write a self-contained HTML page to OUT (opens offline, fetches nothing) and print its "
        "path instead of the text report; --json still prints JSON.",
    )(fn)


def _open_command() -> str:
    if sys.platform == "darwin":
        return "open"
    if os.name == "nt":
        return "start"
    return "xdg-open"


def write_page(out: str, page: str, err: bool = False) -> None:
    """Write `page` to `out`, then say where it went (and, on a terminal, how to open it)."""
    write_file(out, page, err)
    stream = sys.stderr if err else sys.stdout
    if stream.isatty():
        echo(f"open it: {_open_command()} {shlex.quote(out)}", err=err)
