"""Which rank each run is: from its capture (`rank R of W`), a per-rank dump's ordinal suffix
(`save.hlo.3`) or folder name (`rank3`, `3`), or its place on the command line; and per-rank
dumps written without capture read as runs.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from xlagraph.progress import counted
from xlagraph.runlog import GraphRecord, RunLog, Step, Sync

_RANK_NOTE = re.compile(r"^rank (\d+) of (\S+)$")


_ORDINAL = re.compile(r"(?:^|[._-])(?:rank)?(\d+)$")


_SAVE_FILE = re.compile(r"^(.+)\.(\d+)$")  # torch_xla's XLA_SAVE_TENSORS_FILE + ".<ordinal>"


_RANK_DIR = re.compile(r"^(?:rank[_-]?)?(\d+)$")


BEFORE_SUFFIX = ".before_optimizations.txt"


DUMP_DIR_NOTE = (
    "per-rank --xla_dump_to folder: it holds compiles only, so each column is one compile (in dump "
    "order), not a step, and graphs that only ran from the cache are not seen"
)


def rank_of(log: RunLog) -> int | None:
    """The rank a process recorded, else the ordinal of a per-rank dump's name."""
    for note in log.notes:
        m = _RANK_NOTE.match(note)
        if m:
            return int(m.group(1))
    if log.kind == "capture":
        return None
    m = _ORDINAL.search(Path(log.source).name)
    return int(m.group(1)) if m else None


def rank_dir_runs(path: str) -> tuple[RunLog, ...] | None:
    """The per-rank dumps of a folder written without capture, one RunLog per rank, or None when
    the folder is not one: save files `<name>.<ordinal>` (two or more, one name), or
    --xla_dump_to folders named by rank (`rank0`, `rank1`, ... or `0`, `1`, ...)."""
    p = Path(path)
    try:
        entries = sorted(p.iterdir())
    except OSError:
        return None
    files: dict[str, list[tuple[int, Path]]] = {}
    dirs: list[tuple[int, Path]] = []
    for e in entries:
        if e.is_file() and (m := _SAVE_FILE.match(e.name)):
            files.setdefault(m.group(1), []).append((int(m.group(2)), e))
        elif e.is_dir() and (m := _RANK_DIR.match(e.name)) and _before_files(e):
            dirs.append((int(m.group(1)), e))
    if len(files) == 1 and len(next(iter(files.values()))) >= 2 and not dirs:
        from xlagraph.report.savefile import runlog_from_save_file

        saved = sorted(next(iter(files.values())))
        return tuple(runlog_from_save_file(str(f)) for _, f in counted("rank", saved))
    if len(dirs) >= 2 and not files:
        return tuple(runlog_from_dump_dir(str(d)) for _, d in counted("rank", sorted(dirs)))
    return None


def runlog_from_dump_dir(path: str) -> RunLog:
    """A --xla_dump_to folder as a run: one compile per before-optimizations module, in dump
    order (XLA numbers modules as it creates them); a graph is known by its text's hash."""
    from xlagraph.capture.files import dump_order
    from xlagraph.parse.sources import read_bytes

    files = sorted(_before_files(Path(path)), key=lambda f: (dump_order(f.name), f.name))
    syncs, steps, graphs = [], [], {}
    for i, f in enumerate(files):
        h = "dump:" + hashlib.sha1(read_bytes(f)).hexdigest()[:24]  # regular files, bounded
        first = h not in graphs
        graphs.setdefault(h, GraphRecord(graph_hash=h, module=str(f)))
        syncs.append(Sync(index=i, step=i, graph_hash=h, compiled=first))
        steps.append(Step(index=i, start=0.0, end=0.0, compiles=int(first), executions=1))
    return RunLog(
        source=path,
        kind="dump-dir",
        process=Path(path).name,
        syncs=tuple(syncs),
        graphs=graphs,
        steps=tuple(steps),
        notes=(DUMP_DIR_NOTE,),
    )


def world_of(logs: Sequence[RunLog]) -> int | None:
    for log in logs:
        for note in log.notes:
            m = _RANK_NOTE.match(note)
            if m and m.group(2).isdigit():
                return int(m.group(2))
    return None


def uncompressed_name(name: str) -> str:
    """`name` without `.xz` or `.gz`: a compressed dump is read as the text it holds."""
    from xlagraph.parse.compressed import SUFFIXES

    return next((name.removesuffix(s) for s in SUFFIXES if name.endswith(s)), name)


def _before_files(folder: Path) -> list[Path]:
    """The before-optimizations modules of a --xla_dump_to folder, plain or compressed."""
    return [f for f in folder.glob(f"*{BEFORE_SUFFIX}*") if uncompressed_name(f.name).endswith(BEFORE_SUFFIX)]


def rank_sources(specs: Sequence[str]) -> tuple[RunLog, ...] | None:
    """The runs of several ranks given without capture, or None when `specs` are not that.

    One folder of per-rank dumps (`rank_dir_runs`), or two or more whole multi-graph sources
    named one by one (`xlagraph diff save.hlo.0 save.hlo.3`, two `--xla_dump_to` folders): each
    is one rank, numbered by the ordinal in its name, else by its place in `specs`. A spec with
    `#K` names one graph and is never a rank.
    """
    from xlagraph.parse.sources import open_source, single_graph_file

    if any("#" in s for s in specs):
        return None
    if len(specs) == 1:
        return rank_dir_runs(specs[0]) if os.path.isdir(specs[0]) else None
    if any(single_graph_file(s) for s in specs):
        return None  # told from the head: `xlagraph diff a.hlo b.hlo` does not read them twice
    sources = [open_source(s) for s in specs]
    # Whole runs: every one a save file or a dump folder, and not all of a single graph (two
    # single graphs are a plain diff).
    if not all(src.kind in ("save-file", "dump-dir") for src in sources):
        return None
    if all(len(src.graphs) == 1 for src in sources):
        return None
    from xlagraph.report.savefile import runlog_from_save_file

    logs = [
        runlog_from_dump_dir(s) if src.kind == "dump-dir" else runlog_from_save_file(s)
        for s, src in zip(specs, sources, strict=True)
    ]
    ranks = [rank_of(log) for log in logs]
    if any(r is None for r in ranks) or len(set(ranks)) < len(ranks):
        ranks = list(range(len(logs)))  # names without distinct ordinals: the order given
    return tuple(
        replace(log, notes=(*log.notes, _GIVEN_RANK.format(r)))  # the world size is not known
        for r, log in zip(ranks, logs, strict=True)
    )


_GIVEN_RANK = "rank {} of ?"


def given_rank(log: RunLog) -> int | None:
    """The rank `rank_sources` gave a run named on the command line (by its name or its place)."""
    for note in reversed(log.notes):
        head, _, tail = note.partition(" of ?")
        if not tail and head.startswith("rank ") and head[5:].isdigit():
            return int(head[5:])
    return None
