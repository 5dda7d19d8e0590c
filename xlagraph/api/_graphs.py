"""`xlagraph.graphs(src)`: a source's graphs listed with their fingerprints, as `xlagraph graphs`
lists them (text and JSON here, so the CLI only prints)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from xlagraph.errors import reading
from xlagraph.graphs import GraphListing

__all__ = ["Graphs", "graphs"]


@dataclass(frozen=True)
class Graphs(GraphListing):
    """A `GraphListing` that prints itself as `xlagraph graphs` does."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `xlagraph graphs --json` as a dict."""
        from xlagraph.render.json import graphs_to_json

        return graphs_to_json(self)

    def to_json(self) -> str:
        """Exactly what `xlagraph graphs --json` prints (without the final newline)."""
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        """Exactly what `xlagraph graphs` prints."""
        from xlagraph.render.text import render_graphs_text

        return render_graphs_text(self)


def graphs(src: str, progress: Callable[[int, int], None] | None = None) -> Graphs:
    """List the graphs of `src` (what `load_all` reads) with their canonical fingerprints, grouped
    into variants (`xlagraph graphs`), without keeping any graph in memory.

    >>> listing = graphs("fixtures/torch_xla/kept_alive/save_hlo.txt")
    >>> [row.variant for row in listing.rows], listing.unique
    (['A', 'B', 'C'], 3)
    """
    from xlagraph.graphs import list_graphs

    with reading(src):
        listing = list_graphs(src, progress=progress)
    return Graphs(**{f.name: getattr(listing, f.name) for f in fields(listing)})
