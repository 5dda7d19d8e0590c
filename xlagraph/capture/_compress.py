"""At a clean exit, the capture's text files are stored compressed: HLO text compresses 10-20x.
What is stored as `<name>.xz`, when, why at exit and why xz preset 0: docs/capture-settings.md,
"Compressed HLO". A file is compressed once its text is final (after
`stored_sources.portable_dumps` made its paths portable); readers find the `.xz` beside the name
the journal keeps (`parse.compressed.compressed_twin`)."""

from __future__ import annotations

import lzma
import os
from contextlib import suppress

from xlagraph.capture.stored_sources import dump_files

__all__ = ["PRESET", "SUFFIX", "compress_dumps"]

PRESET = 0
SUFFIX = ".xz"
_KEPT = (".xz", ".gz", ".tmp")  # already compressed, or a rewrite left by a failed exit


def compress_dumps(proc_dir: str) -> tuple[int, int]:
    """Compress every text file of the process folder's dumps in place; (bytes before, after)."""
    before = after = 0
    for path in list(dump_files(proc_dir, skip=_KEPT)):  # (listed first: the loop adds files)
        with open(path, "rb") as f:
            data = f.read()
        packed = lzma.compress(data, preset=PRESET)
        tmp = f"{path}{SUFFIX}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(packed)
            os.replace(tmp, path + SUFFIX)
        except OSError:
            with suppress(OSError):
                os.unlink(tmp)
            raise
        os.unlink(path)  # only once its compressed twin is complete
        before += len(data)
        after += len(packed)
    return before, after
