"""`ranks`: the per-rank view of one or more runs' folders, as `graphs DIR` and `diff A B` show it
when their sources are the ranks of a multi-process run (a capture, a folder of per-rank dump
folders, or two runs' dump folders)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xlagraph.errors import reading

if TYPE_CHECKING:
    from xlagraph.report.ranks import RankView

__all__ = ["Ranks", "ranks"]


@dataclass(frozen=True, eq=False)
class Ranks:
    """The ranks of the given sources: whether they compiled and ran the same graphs, and where
    they part (`view`: `xlagraph.report.ranks.RankView`). `named`: (rank, source) for each source
    given that names one rank, as `diff A B` prints them."""

    sources: tuple[str, ...]
    view: RankView
    named: tuple[tuple[int, str], ...]

    @property
    def agree(self) -> bool:
        """Every rank compiled and executed the same graphs, in the same order."""
        return bool(self.view.agree)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `graphs DIR --json` (one source) or `diff A B --json` (two) as a dict."""
        from xlagraph.render.ranks_text import rank_view_to_json

        head = {"path": self.sources[0]} if len(self.sources) == 1 else {}
        return {**head, "kind": "ranks", "ranks": rank_view_to_json(self.view)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        """Exactly what the command prints for these sources."""
        from xlagraph.render.ranks_text import render_ranks_text

        names = "".join(f"rank {r}: {spec}\n" for r, spec in self.named) if len(self.sources) > 1 else ""
        return names + render_ranks_text(self.view)

    def __repr__(self) -> str:
        lines = self.to_text().splitlines()
        return "\n".join(lines[:4]) + ("\n..." if len(lines) > 4 else "")


def ranks(*sources: str) -> Ranks | None:
    """The rank view of `sources` (one folder of ranks, or two runs); None when they are not the
    ranks of a run (single graphs: use `diff` or `graphs`).

    >>> view = ranks("fixtures/torch_xla/ranks/short_batch/dump")
    >>> view is not None, view.agree
    (True, False)
    """
    from xlagraph.parse.sources import single_graph_file

    # Single graphs, told as `rank_sources` tells them, without importing it: a graph `#K`, one
    # source that is not a folder of ranks, several of which one is a single graph.
    if any("#" in s for s in sources) or (len(sources) == 1 and not os.path.isdir(sources[0])):
        return None
    if len(sources) > 1 and any(single_graph_file(s) for s in sources):
        return None
    from xlagraph.report.ranks import rank_view
    from xlagraph.report.ranks.sources import given_rank, rank_sources

    label = " vs ".join(sources)
    with reading(label):
        logs = rank_sources(list(sources))
        view = rank_view(logs) if logs else None
    if logs is None or view is None:
        return None
    named = tuple(
        (r, spec) for log, spec in zip(logs, sources, strict=False) if (r := given_rank(log)) is not None
    )
    return Ranks(tuple(sources), view, named)
