"""Reading one input file safely: regular files only (a FIFO or a device is refused, never waited
on), within the input limit (`XLAGRAPH_MAX_INPUT_MB`), `.xz`/`.gz` decompressed, and for a graph
file its text (a binary HLO proto printed as the HLO text XLA prints).
"""

from __future__ import annotations

import errno
import os
import re
import stat

from xlagraph.errors import InputError
from xlagraph.parse.compressed import decompress
from xlagraph.parse.stablehlo import BYTECODE_MAGIC

__all__ = [
    "DEFAULT_MAX_INPUT_MB",
    "MAX_INPUT_ENV",
    "check_regular_file",
    "max_input_bytes",
    "read_bytes",
    "read_text",
    "size_error",
]

BYTECODE_HINT = (
    "MLIR bytecode (a serialized StableHLO artifact) is not read: write it as text first "
    "(`stablehlo-translate --deserialize FILE`, or JAX's `lowered.as_text()`)"
)
_SNIFF_BYTES = 8192
_DIGITS = re.compile(r"[0-9]+")
_CHUNK = 1 << 24  # bytes read at a time from a file that grows while it is read
MAX_INPUT_ENV = "XLAGRAPH_MAX_INPUT_MB"
DEFAULT_MAX_INPUT_MB = 2048  # a 600K-instruction HLO module is about 150 MB of text


def max_input_bytes() -> int:
    """The largest input file read, from `XLAGRAPH_MAX_INPUT_MB` (default 2048 MB)."""
    raw = os.environ.get(MAX_INPUT_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT_MB << 20
    if not _DIGITS.fullmatch(raw) or int(raw) == 0 or len(raw) > 9:
        raise InputError("", f"{MAX_INPUT_ENV} must be a whole number of megabytes (1 or more), got {raw!r}")
    return int(raw) << 20


def size_error(path: str, size: int, limit: int) -> InputError:
    """The error for an input (one file, or a folder's files together) past the input limit."""
    return InputError(
        path,
        f"{size / (1 << 20):.0f} MB is over the input limit of {limit >> 20} MB "
        f"(set {MAX_INPUT_ENV} to read larger inputs)",
    )


def check_regular_file(path: str | os.PathLike[str]) -> int:
    """The size of `path` if it is a regular file (symbolic links followed) within the input
    limit; otherwise an `InputError` that says what it is instead. Never blocks."""
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise InputError(name, "no such file or directory") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InputError(name, "symbolic link loop") from None
        raise InputError(name, f"cannot read: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(name, "is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(name, f"is {_file_kind(st.st_mode)}, not a regular file")
    limit = max_input_bytes()
    if st.st_size > limit:
        raise size_error(name, st.st_size, limit)
    return st.st_size


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file, at most `max_input_bytes()` of them: a FIFO, a device
    (`/dev/zero`), a socket, a directory or a symbolic link loop is refused with one line."""
    name = os.fspath(path)
    check_regular_file(name)
    limit = max_input_bytes()
    try:
        # O_NONBLOCK: if the file was swapped for a FIFO since the check, opening must not wait.
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise InputError(name, f"cannot read: {e.strerror or e}") from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(name, "is not a regular file")
        # Read what the file holds now (one allocation of its size, never of the limit), then
        # whatever it grew by since, in bounded chunks, until the limit.
        chunks: list[bytes] = []
        total, want = 0, min(st.st_size, limit) + 1
        try:
            while total <= limit:
                chunk = f.read(want)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                want = min(_CHUNK, limit + 1 - total)
        except OSError as e:
            raise InputError(name, f"cannot read: {e.strerror or e}") from None
    if total > limit:
        raise size_error(name, total, limit)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return decompress(name, data, limit)  # .xz, .gz: the text they hold


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def read_text(path: str) -> str:
    """The file's text; a binary HLO proto (`--xla_dump_hlo_as_proto`, a compile cache's
    `.hlo_module.pb`) as the HLO text XLA prints for the same module."""
    data = read_bytes(path)
    if not data or data.isspace():  # (`not data.strip()` without copying the whole file)
        raise InputError(path, "empty file")
    if data.startswith(BYTECODE_MAGIC):
        raise InputError(path, BYTECODE_HINT)
    # XLA's module messages all begin with field 1 (a name, or the wrapped module): byte 0x0a.
    if b"\0" in data[:_SNIFF_BYTES] or data[:1] == b"\n":
        # The proto reader is imported only for what may be one: HLO text starts with a letter.
        from xlagraph.parse.hlo_proto import ProtoError, looks_like_hlo_proto, proto_to_text

    if b"\0" in data[:_SNIFF_BYTES] or (data[:1] == b"\n" and looks_like_hlo_proto(data)):
        if looks_like_hlo_proto(data):
            try:
                return proto_to_text(data)
            except ProtoError as e:
                raise InputError(path, f"HLO proto: {e}") from None
        raise InputError(path, "binary file, neither HLO text nor an HLO module proto")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte {e.start})") from None
