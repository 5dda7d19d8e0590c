"""Errors the library raises for bad input. The CLI turns each into one line and exit status 2."""

from __future__ import annotations

__all__ = ["InputError", "ParseError", "XlagraphError"]


class XlagraphError(Exception):
    """Base class: anything a user can fix by pointing xlagraph at other input."""


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
