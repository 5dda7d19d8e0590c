"""torch_xla's PT_XLA_DEBUG file, read as it grows.

torch_xla appends one analysis block per graph compile or execution to the file named by
PT_XLA_DEBUG_FILE; the recorder reads what is new at each step marker. The file stays open and is
read from where the last read stopped (creating, renaming or deleting a file costs 0.1 – 0.4 ms
here, more than the rest of the hook).
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress

__all__ = ["DEBUG_ROTATE_BYTES", "DebugStream", "decode"]

DEBUG_ROTATE_BYTES = 4 << 20  # the PT_XLA_DEBUG file is started anew past this size


class DebugStream:
    """The read position in the PT_XLA_DEBUG file, and where to forward what was read."""

    def __init__(self, path: str, reading_path: str, forward: str | None) -> None:
        self.path = path
        self.reading_path = reading_path  # the name it is renamed to while read to its end
        self.forward = forward  # None: not forwarded; "": to stderr; else the file to append to
        self.fd: int | None = None
        self.offset = 0

    def unread(self) -> int:
        """Bytes torch_xla has written to the PT_XLA_DEBUG file that are not read yet."""
        try:
            if self.fd is not None:
                return os.fstat(self.fd).st_size - self.offset
            return os.stat(self.path).st_size
        except FileNotFoundError:
            return 0

    def read(self) -> bytes:
        """What torch_xla appended to the PT_XLA_DEBUG file since the last read.

        Past DEBUG_ROTATE_BYTES the file is renamed away, read to its end and deleted: torch_xla
        opens it by name for every message, so its next one starts a new file.
        """
        if self.fd is None:
            try:
                self.fd, self.offset = os.open(self.path, os.O_RDONLY), 0
            except FileNotFoundError:
                return b""
        data = _read_all(self.fd)
        self.offset += len(data)
        if self.offset >= DEBUG_ROTATE_BYTES:
            os.replace(self.path, self.reading_path)
            data += _read_all(self.fd)
            os.close(self.fd)
            os.unlink(self.reading_path)
            self.fd, self.offset = None, 0
        if self.forward is not None and data:
            self._forward(data)
        return data

    def consumed(self, carry: str) -> int | None:
        """Offset in the current file up to which the journal has everything (None: no file open):
        what a reader of a killed run's folder skips. `carry`, a block still being written, is not
        consumed."""
        if self.fd is None:
            return None
        return max(0, self.offset - len(carry.encode()))

    def close(self) -> None:
        """At a clean exit: everything read is in the journal, so the file goes."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            with suppress(OSError):
                os.unlink(self.path)

    def _forward(self, data: bytes) -> None:
        if self.forward:
            with open(self.forward, "ab") as f:
                f.write(data)
        else:
            sys.stderr.write(decode(data))
            sys.stderr.flush()


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)
