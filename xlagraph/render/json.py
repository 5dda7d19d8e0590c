"""JSON-ready dicts of diff results and graph listings (plain lists, dicts, str, int, bool).

Key order is fixed and lists keep the engine's order, so the same input gives the same text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: listing graphs needs no diagnosis engine
    from xlagraph.canonical import CanonicalModule
    from xlagraph.diagnose.causes import Cause
    from xlagraph.diff import DiffResult
    from xlagraph.graphs import GraphListing


__all__ = ["diff_to_json", "graphs_to_json"]


def _module(canon: CanonicalModule) -> dict[str, Any]:
    module = canon.module
    return {
        "label": module.info.label or module.path,
        "path": module.path,
        "name": module.name,
        "format": module.format,
        "fingerprint": canon.fingerprint,
        "instructions": module.instruction_count,
        "computations": len(module.computations),
        "graph_hash": module.info.graph_hash,
    }


def _cause(cause: Cause) -> dict[str, Any]:
    from xlagraph.render.paths import split_user_lines

    user, library = split_user_lines(cause.sources, cause.library)  # sources: the user's lines only
    return {
        "kind": str(cause.kind),
        "summary": cause.summary,
        "hint": cause.hint,
        "fix_id": cause.fix_id,
        "info": cause.info,
        "computation": cause.computation,
        "left": list(cause.left),
        "right": list(cause.right),
        "changes": [
            {"left": c.left, "right": c.right, "what": c.what, "old": c.old, "new": c.new}
            for c in cause.changes
        ],
        "mapping": [
            {
                "left": m.left,
                "right": m.right,
                "shape": m.shape,
                "left_name": m.left_name,
                "right_name": m.right_name,
                "what": m.what,
            }
            for m in cause.mapping
        ],
        "sources": user,
        "library_sources": library,
        "count": cause.count,
    }


def diff_to_json(result: DiffResult) -> dict[str, Any]:
    """The diff as a dict: verdict, the two modules, every cause, notes, changed names."""
    from xlagraph.diagnose.changed import changed_instructions
    from xlagraph.graphs import one_compile_stages

    left, right = changed_instructions(result.differences)
    return {
        "verdict": result.verdict,
        "differences": len(result.differences),
        "left": _module(result.left),
        "right": _module(result.right),
        "causes": [_cause(c) for c in result.causes],
        "notes": list(result.notes),
        "unseen_constants": list(result.unseen),
        "changed": {"left": list(left), "right": list(right)},
        # Two stages of one --xla_dump_to compile: the causes above are XLA's own rewrites.
        "one_compile": one_compile_stages(result.left.module.info, result.right.module.info),
    }


def graphs_to_json(listing: GraphListing) -> dict[str, Any]:
    """The listing as a dict: one entry per graph, the variant count and the reader's notes."""
    return {
        "path": listing.path,
        "kind": listing.kind,
        "modules": [
            {
                "index": r.index,
                "name": r.name,
                "label": r.label,
                "instructions": r.instructions,
                "computations": r.computations,
                "graph_hash": r.graph_hash,
                "fingerprint": r.fingerprint,
                "variant": r.variant,
                "stage": r.stage,
                "compile": r.compile,
                "format": r.format,
            }
            for r in listing.rows
        ],
        "unique": listing.unique,
        "compiles": len(listing.compiles),
        "variants": list(listing.variants),
        "unique_graph_hashes": listing.unique_graph_hashes,
        "notes": list(listing.notes),
    }
