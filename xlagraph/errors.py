"""Errors the library raises for bad input. The CLI turns each into one line and exit status 2."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["InputError", "ParseError", "RecompileError", "XlagraphError", "XlagraphWarning", "reading"]


class XlagraphError(Exception):
    """Base class: anything a user can fix by pointing xlagraph at other input."""


class XlagraphWarning(UserWarning):
    """Something xlagraph could not do on this input that does not stop the answer (a pattern
    recognizer that failed): the CLI prints it as one line on stderr."""


class InputError(XlagraphError):
    """The input cannot be read: missing, empty, binary, wrong format, index out of range."""

    def __init__(self, path: str, message: str, line: int = 0) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}" if path else message)


class ParseError(InputError):
    """The input is in a format xlagraph reads but is malformed at `line`."""


class RecompileError(RuntimeError):
    """XLAGRAPH_ON_RECOMPILE=raise: the run recompiled after its warm-up. Raised at the step
    boundary after the helper explained it: `explanation` (cause, line, fix), `step`, and the
    process's capture folder (`capture`) for `xlagraph report`."""

    def __init__(self, explanation: str, step: int | None, capture: str) -> None:
        self.explanation = explanation
        self.step = step
        self.capture = capture
        super().__init__(f"{explanation} (capture: {capture}; xlagraph report {capture})")


@contextmanager
def reading(what: str) -> Iterator[None]:
    """Re-raise Python's failures while `what` (a path, or `A vs B`) is processed as `InputError`."""
    try:
        yield
    except XlagraphError:
        raise
    except UnicodeDecodeError as e:
        raise InputError(what, f"not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        if e.filename:
            raise InputError(str(e.filename), f"cannot read: {e.strerror or e}") from None
        raise InputError(what, f"cannot read: {e.strerror or e}") from None
    except RecursionError:
        raise InputError(what, "graph nested too deeply to analyze (Python recursion limit)") from None
    except MemoryError:
        raise InputError(what, "out of memory while reading it; try one graph at a time (PATH#K)") from None
