"""The files a capture keeps beside its journal made to last: dumps with portable paths, the
source text their frames cite (`stored_sources`), and the dumps compressed at exit. Each call
notes what failed and goes on: never a reason to lose the journal.
"""

from __future__ import annotations

import os
from typing import Any

from xlagraph.capture._compress import compress_dumps
from xlagraph.capture._host import Host
from xlagraph.capture.stored_sources import (
    budget_bytes,
    portable_dumps,
    portable_file,
    portable_meta,
    store_sources,
)

__all__ = ["compress", "make_portable", "store_at_exit", "store_new_sources"]


def make_portable(host: Host, path: str) -> None:
    """A dump the capture keeps is complete: its paths become portable now, not at exit."""
    try:
        portable_file(path, host.paths)
    except OSError as e:  # (removed under us): exit tries again
        host.note(f"{os.path.basename(path)}: paths not made portable yet: {e}")


def store_new_sources(host: Host, stored: tuple[int, int]) -> tuple[int, int]:
    """After a step that cited a file or line not cited before (`stored`: what the paths knew at
    the last call; returned anew): `sources/` stored again (new blobs only), so that a run
    killed before its end keeps the source its records cite."""
    known = (len(host.paths.original), sum(len(v) for v in host.paths.cited.values()))
    if known == stored:
        return stored
    try:
        store_sources(host.dir, host.paths, budget_bytes())
    except Exception as e:  # (a full disk): exit tries again
        host.note(f"sources not stored yet: {type(e).__name__}: {e}")
    return known


def store_at_exit(host: Host, meta: dict[str, Any]) -> dict[str, Any]:
    """At exit: dumps and meta.json with portable paths (the meta returned), and the source text
    frames cite; `meta` unchanged where that failed."""
    try:
        portable_dumps(host.dir, host.paths)
        index = store_sources(host.dir, host.paths, budget_bytes())
        meta = portable_meta(meta, host.dir, host.paths)
    except Exception as e:  # (a full disk, a file removed under us): the report reads fewer lines
        host.note(f"sources not stored: {type(e).__name__}: {e}")
        return meta
    if index["lines"]:
        host.note(
            f"sources: {len(index['lines'])} file(s) past the {budget_bytes() >> 20} MB budget "
            "(XLAGRAPH_SOURCES_MB) keep only their cited lines"
        )
    return meta


def compress(host: Host) -> None:
    """At exit, once the dumps' text is final: store them as .xz (`_compress`)."""
    if not host.settings.compress:
        return
    try:
        compress_dumps(host.dir)
    except Exception as e:  # (a full disk): what is not compressed stays plain text, as readable
        host.note(f"dumps not compressed: {type(e).__name__}: {e}")
