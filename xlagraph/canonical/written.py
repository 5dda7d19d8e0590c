"""A module's Shardy shardings in the names it wrote (issue 37).

The canonical form spells Shardy's mesh and axis names as bound names (rust/src/canon/shardy.rs:
`@mesh<[2,2]>`, `\\"#0\\"`), so that renaming them consistently is no change; the comparison
reads that spelling, and only the comparison: every view (a change's text, the diff page's rows,
GraphML, the API's instructions) says a sharding as its module wrote it, A's names for A's
instruction and B's for B's, from the module's `Written` (what the reader re-spelled, kept
where it re-spelled it). Where a change's mesh itself changed (its axes' names or sizes, its
devices), each side's text writes its mesh out in place (`@mesh<[\\"a\\"=4, \\"b\\"=1]>, [...]`):
the same written names on both sides would read as no change.
"""

from __future__ import annotations

import re

from xlagraph.ir import Instruction, Module

__all__ = ["as_written", "changed_texts"]

# A mesh named in a sharding value: `#sdy.sharding<@mesh, ...>`, `sharding_per_value<[<@mesh, ...`.
_MESH = re.compile(r"(?<=<)@([\w.$-]+)")


def as_written(module: Module | None, ins: Instruction) -> Instruction:
    """`ins` with its attributes as its module wrote them (`ins` itself where the reader
    re-spelled none of them)."""
    values = module.written.values if module is not None else None
    if not values:
        return ins
    attributes = tuple(
        (k, values.get((ins.line, v), v)) if k == "frontend_attributes" else (k, v) for k, v in ins.attributes
    )
    return ins if attributes == ins.attributes else ins._replace(attributes=attributes)


def changed_texts(left: Module, old: str, right: Module, new: str) -> tuple[str, str]:
    """A change's two texts, each as its module wrote it (see `as_written`), with each mesh they
    name written out in place where the other module has no mesh of that name and definition."""
    lm, rm = left.written.meshes, right.written.meshes
    if not (lm or rm):
        return old, new
    return _meshes_out(old, lm, rm), _meshes_out(new, rm, lm)


def _meshes_out(text: str, own: dict[str, str], other: dict[str, str]) -> str:
    def spell(m: re.Match[str]) -> str:
        mesh = own.get(m.group(1))
        return m.group(0) if mesh is None or other.get(m.group(1)) == mesh else m.group(0) + mesh

    return _MESH.sub(spell, text)
