"""What every command shares: the error boundary, the `reading` guard, a status line, options.

The library raises `XlagraphError` (already worded `path:line: message`); here it becomes one
line on stderr and exit status 2. Python's own failures while a file is read (OSError,
UnicodeDecodeError, RecursionError, MemoryError) get the same treatment, naming the file.
Ctrl-C exits with 130 and says nothing. Output that cannot be written: a closed pipe
(`xlagraph graphs X | head -1`) exits 141 (as if killed by SIGPIPE) and says nothing; a full disk
or another write error is one line and exit 2. Text from a dump (names, metadata, messages) never
reaches the terminal raw: `printable` escapes control characters and bidirectional overrides.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any, TypeVar

import click

from xlagraph.errors import XlagraphError, reading  # Python's failures named as the library does

__all__ = [
    "EXIT_ERROR",
    "Status",
    "UserError",
    "echo",
    "finish_output",
    "graphml_option",
    "handle_errors",
    "json_option",
    "output_failed",
    "printable",
    "reading",
    "run_option",
    "write_file",
]

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool killed by a closed pipe
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})
# C0 and C1 controls except newline and tab, DEL, and the bidirectional overrides/isolates that
# reorder what a terminal shows (a name from a dump must not rewrite the line it is printed on).
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
STATUS_DELAY = 0.5  # seconds before a status line appears
REDRAW_INTERVAL = 0.1  # seconds between two redraws of a progress bar

F = TypeVar("F", bound=Callable[..., Any])

# True in the installed command's process (`main.entry`), which ends with the command without
# tearing down what it built; False where commands run inside another program (tests, notebooks).
ONE_COMMAND_PROCESS = False


def collect_no_garbage() -> None:
    """In a process that ends with this command, stop the cyclic garbage collector for good: what
    a diff builds lives until the process ends, and each collection only rescans it (about 40 ms
    of a diff of two 120K-instruction graphs). Elsewhere nothing changes."""
    if ONE_COMMAND_PROCESS:
        import gc

        gc.disable()


class UserError(click.ClickException):
    """Bad input: `xlagraph: error: <message>` on one line, exit status 2."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(printable(" ".join(message.splitlines())))

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"xlagraph: error: {self.format_message()}", err=True)


def handle_errors(fn: F) -> F:
    """Turn library errors into `UserError` and Ctrl-C into a quiet exit 130."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except XlagraphError as e:
            raise UserError(str(e)) from None
        except KeyboardInterrupt:
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except OSError as e:
            raise click.exceptions.Exit(output_failed(e)) from None

    return wrapper  # type: ignore[return-value]


def printable(text: str) -> str:
    """`text` with every control character but newline and tab written as `\\xNN` / `\\uNNNN`."""
    if not _UNPRINTABLE.search(text):
        return text
    return _UNPRINTABLE.sub(_escape, text)


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def echo(text: str, *, nl: bool = True, err: bool = False) -> None:
    """`click.echo` of text that may quote a dump: escaped first (JSON escapes itself)."""
    click.echo(printable(text), nl=nl, err=err)


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def output_failed(e: OSError) -> int:
    """The exit status for a failed write to stdout (after saying so for a full disk); any
    other OSError is raised again. stdout is pointed at /dev/null so nothing fails again."""
    if isinstance(e, BrokenPipeError) or e.errno == errno.EPIPE:
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    if e.errno in _OUTPUT_ERRNOS and e.filename is None:
        _discard_stdout()
        UserError(f"cannot write the output: {e.strerror or e}").show()
        return EXIT_ERROR
    raise e


def finish_output(code: int | str | None) -> int | str | None:
    """Flush stdout at the end of a command, turning a failure into the exit status it gives."""
    try:
        sys.stdout.flush()
    except OSError as e:
        return output_failed(e)
    return code


def run_option(fn: F) -> F:
    """`--run latest|all|N` for commands that read capture folders."""

    def convert(ctx: click.Context, param: click.Parameter, value: str) -> str | int:
        from xlagraph.api import run_choice

        try:
            return run_choice(value)
        except ValueError as e:
            raise click.BadParameter(str(e).removeprefix("--run ")) from None

    return click.option(
        "--run",
        "run",
        default="latest",
        show_default=True,
        metavar="latest|all|N",
        callback=convert,
        help="A capture folder used by several runs holds them all: which to read (N counts "
        "from 1, the oldest). The output names every run found.",
    )(fn)


def graphml_option(fn: F) -> F:
    """`--graphml OUT`: write the graph(s) as GraphML, for Gephi, yEd and other graph viewers."""
    return click.option(
        "--graphml",
        "graphml_out",
        type=click.Path(dir_okay=False, writable=True),
        metavar="OUT",
        help="Write the graph as GraphML to OUT (one node per instruction, one edge per operand use "
        "or call) for Gephi, yEd and other graph viewers, and print its path.",
    )(fn)


def write_file(out: str, text: str, err: bool = False) -> None:
    """Write `text` (GraphML, a page) to `out`, then say where it went."""
    try:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise UserError(f"{out}: cannot write: {e.strerror or e}") from None
    echo(f"wrote {out}", err=err)


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


class Status:
    """A one-line status on stderr, shown only on a terminal and only once work lasts `delay` s.

    `set(text)` names the current phase; `progress(done, total)` adds a bar to it and can be
    passed straight to the library as its progress callback. Use as a context manager, so the
    line is erased before anything else is printed.
    """

    def __init__(self, stream: IO[str] | None = None, delay: float = STATUS_DELAY) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._lock = threading.Lock()
        self._phase = ""
        self._line = ""
        self._visible = False
        self._progress_at = float("-inf")
        self._timer: threading.Timer | None = None
        if _is_terminal(self._stream):
            self._timer = threading.Timer(delay, self._reveal)
            self._timer.daemon = True
            self._timer.start()

    def __enter__(self) -> Status:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set(self, phase: str) -> None:
        with self._lock:
            self._phase = self._line = phase
            self._draw()

    def progress(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._progress_at < REDRAW_INTERVAL:
            return
        self._progress_at = now
        width = 24
        filled = width * done // total if total else width
        with self._lock:
            self._line = f"{self._phase} [{'#' * filled}{'-' * (width - filled)}] {done}/{total}"
            self._draw()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._visible:
                self._stream.write("\r\x1b[K")
                self._stream.flush()
            self._visible = False
            self._timer = None

    def _reveal(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._visible = True
                self._draw()

    def _draw(self) -> None:
        if not self._visible:
            return
        columns = shutil.get_terminal_size((80, 24)).columns
        self._stream.write("\r\x1b[K" + printable(f"xlagraph: {self._line}")[: max(columns - 1, 10)])
        self._stream.flush()


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
