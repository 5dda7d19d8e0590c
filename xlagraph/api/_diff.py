"""`diff`: why two graphs differ, as a `Diff` that prints, renders and serializes like the CLI.

`Diff.to_json()` is exactly what `xlagraph diff --json` prints, `to_text()` what it prints
without options, `to_html()` the page `--html` writes; in a notebook the diff shows itself as
that page's content (`_repr_html_`). A cause is the engine's `xlagraph.diagnose.causes.Cause`:
`kind`, `summary`, `hint` (the fix), `info` (expected, nothing to fix), `left` / `right` (the
instructions involved on each side), `changes` (old and new values), `mapping` (how inputs or
outputs moved), `sources` (the user's lines) and `library` (the library lines beside them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xlagraph.api._module import Module, load, node_id
from xlagraph.errors import reading

if TYPE_CHECKING:
    from xlagraph.diagnose.causes import Cause
    from xlagraph.diff import DiffResult

__all__ = ["Diff", "diff"]


@dataclass(frozen=True, eq=False)
class Diff:
    """Two graphs compared. `verdict` is `identical`, `different` (`causes` say why) or
    `undetermined` (the same as printed, but `unseen_constants` are constants whose values the
    dumps elide); `notes` are remarks that change nothing (dead code); `changed` the instructions
    the causes name on each side (A, B), by name."""

    verdict: str
    left: Module
    right: Module
    causes: tuple[Cause, ...]
    notes: tuple[str, ...]
    unseen_constants: tuple[str, ...]
    changed: tuple[tuple[str, ...], tuple[str, ...]]
    result: DiffResult = field(repr=False)

    def changed_ids(self, side: str) -> tuple[str, ...]:
        """The changed instructions of side `A` or `B` as node keys of that module's
        `to_networkx()` graph (`computation/name`), in the computation each cause names."""
        if side not in ("A", "B"):
            raise ValueError(f"side must be 'A' or 'B', got {side!r}")
        module = self.left if side == "A" else self.right
        where = _computations(self.result, side)
        ids: dict[str, None] = {}
        for cause in self.causes:
            names = [*(cause.left if side == "A" else cause.right)]
            names += [c.left if side == "A" else c.right for c in cause.changes]
            computation = where.get(cause.computation or self.left.entry.name, module.entry.name)
            here = module.computation(computation).by_name
            for name in filter(None, names):
                found = computation if name in here else _owner(module, name)
                if found:
                    ids.setdefault(node_id(found, name))
        return tuple(ids)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `xlagraph diff --json` as a dict."""
        from xlagraph.render.json import diff_to_json

        return diff_to_json(self.result)

    def to_json(self) -> str:
        """Exactly what `xlagraph diff --json` prints (without the final newline)."""
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self, max_changes: int = 20) -> str:
        """Exactly what `xlagraph diff` prints; `max_changes` bounds every list (0: no bound)."""
        from xlagraph.render.text import render_diff_text

        return render_diff_text(self.result, max_changes=max_changes)

    def to_graphml(self) -> str:
        """Both graphs as one GraphML file, each node with its `side`, `status` and `counterpart`
        (`xlagraph diff --graphml`)."""
        from xlagraph.api._graphml import diff_graphml

        return diff_graphml(self)

    def to_html(self) -> str:
        """The self-contained page `xlagraph diff --html` writes."""
        from xlagraph.render.html_diff import render_diff_html

        with reading(f"{self.left.label} vs {self.right.label}"):
            return render_diff_html(self.result)

    def __repr__(self) -> str:
        return "\n".join(self.to_text(max_changes=5).splitlines()[:3])

    def _repr_html_(self) -> str:
        from xlagraph.render.notebook import diff_html

        return diff_html(self.result)


def _computations(result: DiffResult, side: str) -> dict[str, str]:
    """Left computation -> the computation of `side` it was compared with."""
    return {p.left: (p.left if side == "A" else p.right) for p in result.pairs}


def _owner(module: Module, name: str) -> str:
    for c in module.computations:
        if name in c.by_name:
            return c.name
    return ""


def _quiet(phase: str) -> None:
    pass


def _load_both(a: str, b: str, phase: Callable[[str], None]) -> tuple[Module, Module]:
    """`load(a)` and `load(b)`, each on a thread of its own (the compiled reader parses and
    canonicalizes without the GIL), while this thread imports the engine (`_import_engine`).
    The answers and errors are the sequential ones: A's error first, B's only once A is read.
    The readers import nothing once `parse.sources` is imported: no import runs on two threads."""
    from concurrent.futures import ThreadPoolExecutor
    from contextvars import copy_context

    # What the readers import (the proto and lazy-IR readers only when a file is one), imported
    # here first.
    import xlagraph.parse.hlo_proto
    import xlagraph.parse.lazy_ir
    import xlagraph.parse.sources  # noqa: F401
    from xlagraph._gc import paused_gc
    from xlagraph.parse.hlo import LAZY_IR

    with paused_gc(), ThreadPoolExecutor(2) as pool:
        phase(f"reading A: {a}")
        lazy = LAZY_IR.set(True)  # a diff asks about a few instructions of each side
        try:
            # Each on a copy of this context: the same progress sink and sharing.
            first = pool.submit(copy_context().run, load, a)
            later = pool.submit(copy_context().run, _load_ir_first, b)
        finally:
            LAZY_IR.reset(lazy)
        _import_engine()
        left = first.result()
        phase(f"reading B: {b}")
        return left, later.result()


def _load_ir_first(spec: str) -> Module:
    """`load(spec)` with its IR built before its canonical form (`IR_FIRST`): beside another
    reader, on a copy of the caller's context."""
    from xlagraph.parse.hlo import IR_FIRST

    IR_FIRST.set(True)
    return load(spec)


def _import_engine() -> None:
    """What a diff runs after reading, imported while the graphs are read."""
    import xlagraph.diagnose.frames
    import xlagraph.diff
    import xlagraph.render.text
    import xlagraph.report.source_text  # noqa: F401


def diff(a: str | Module, b: str | Module, *, phase: Callable[[str], None] = _quiet) -> Diff:
    """Compare graph `a` with graph `b` (paths as `load` reads them, or `Module`s) and name what
    makes them differ. `phase(text)` is told what is being done, for a progress display.

    >>> d = diff("fixtures/torch_xla/ragged_batch/a.hlo", "fixtures/torch_xla/ragged_batch/b.hlo")
    >>> d.verdict, [str(c.kind) for c in d.causes]
    ('different', ['parameter_shape'])
    >>> d.causes[0].changes[0].old, d.causes[0].changes[0].new
    ('f32[4,4]', 'f32[2,4]')
    >>> d.changed_ids("A")[:2]
    ('SyncTensorsGraph.70/p0.1', 'SyncTensorsGraph.70/p3.6')
    """
    if isinstance(a, str) and isinstance(b, str):
        left, right = _load_both(a, b, phase)
    else:
        phase(f"reading A: {a if isinstance(a, str) else a.label}")
        left = a if isinstance(a, Module) else load(a)
        phase(f"reading B: {b if isinstance(b, str) else b.label}")
        right = b if isinstance(b, Module) else load(b)
    from xlagraph.diagnose.changed import changed_instructions
    from xlagraph.diagnose.frames import reading_sources
    from xlagraph.diff import diff_modules
    from xlagraph.report.source_text import source_text_near

    phase("matching")
    names = (x if isinstance(x, str) else x.label for x in (a, b))
    # A dump inside a capture folder is read with the capture's stored sources (the files as they
    # were when it ran, on the machine that ran it), never the analysing machine's.
    files = [re.sub(r"#\d+$", "", x) for x in (a, b) if isinstance(x, str)]
    with reading(" vs ".join(names)), reading_sources(source_text_near(files)):
        result = diff_modules(left.ir, right.ir)
    changed = changed_instructions(result.differences)
    return Diff(result.verdict, left, right, result.causes, result.notes, result.unseen, changed, result)
