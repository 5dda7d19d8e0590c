"""The API's error boundary: whatever Python raises while a file is read becomes `InputError`.

The library's own errors (`XlagraphError`) already name the file and line; OSError,
UnicodeDecodeError, RecursionError and MemoryError are given the same form here, worded as the
CLI words them, so a caller catches one type.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from xlagraph.errors import InputError, XlagraphError

__all__ = ["reading"]


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
