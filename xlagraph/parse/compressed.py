"""Compressed dumps read as the text they hold: `.xz` (lzma) and `.gz` (gzip), with the standard
library only. HLO text compresses 10-20x, so stored captures (the corpus in fixtures/) keep large
files as `<file>.xz`; every reader goes through `parse.input_files.read_bytes`, which calls this.

Decompression stops one byte past the input limit, so a small bomb cannot fill the memory."""

from __future__ import annotations

import lzma
import os
import zlib

from xlagraph.errors import InputError

__all__ = ["SUFFIXES", "compressed_twin", "decompress"]

SUFFIXES = (".xz", ".gz")
_CHUNK = 1 << 20


def compressed_twin(path: str) -> str:
    """`path` + `.xz` or `.gz` when only that exists (a stored capture's file), else `path`."""
    if os.path.lexists(path):
        return path
    for suffix in SUFFIXES:
        if os.path.isfile(path + suffix):
            return path + suffix
    return path


def decompress(name: str, data: bytes, limit: int) -> bytes:
    """The bytes `data` (the file `name`) holds when `name` ends in `.xz` or `.gz`; else `data`.
    At most `limit` bytes: more is an `InputError`, as for a plain file over the limit."""
    kind = next((s[1:] for s in SUFFIXES if name.endswith(s)), "")
    if not kind:
        return data
    out: list[bytes] = []
    total = 0
    try:
        if kind == "xz":
            xz = lzma.LZMADecompressor()
            pending, eof = data, False
            while not eof:
                chunk = xz.decompress(pending, _CHUNK)
                pending, eof = b"", xz.eof
                total += len(chunk)
                out.append(chunk)
                if total > limit:
                    break
                if not chunk and xz.needs_input:
                    break  # input ended before the stream did
        else:
            gz = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # the gzip container
            pending, eof = data, False
            while not eof:
                chunk = gz.decompress(pending, _CHUNK)
                pending, eof = gz.unconsumed_tail, gz.eof
                total += len(chunk)
                out.append(chunk)
                if total > limit or (not chunk and not pending):
                    break
    except (lzma.LZMAError, zlib.error) as e:
        raise InputError(name, f"not a valid .{kind} file ({e})") from None
    if total > limit:
        raise InputError(name, f"decompresses to more than the input limit ({limit / 2**20:g} MB)")
    if not eof:
        raise InputError(name, f"truncated .{kind} file")
    return b"".join(out)
