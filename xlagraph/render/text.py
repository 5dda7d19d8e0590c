"""Plain-text reports for the terminal: short, causes first, every long list bounded.

The reader is a PyTorch/XLA user whose step recompiles: the first line answers "did it change?",
the next block names the causes with the user's source lines and a fix, and instruction names come
last, for whoever wants to find them in the dump.
"""

from __future__ import annotations

import shlex
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from xlagraph.diagnose.listing import plural
from xlagraph.render.paths import split_user_lines
from xlagraph.source_paths import short_location, short_locations_in

if TYPE_CHECKING:  # annotations only: listing graphs needs no diagnosis engine
    from xlagraph.canonical import CanonicalModule
    from xlagraph.diagnose.causes import Cause, Moved
    from xlagraph.diff import DiffResult
    from xlagraph.graphs import GraphListing, GraphRow
    from xlagraph.ir import Module


__all__ = ["render_diff_text", "render_graphs_text"]

WIDTH = 100
_INDENT = "  "

_MAX_VARIANTS_NAMED = 12

T = TypeVar("T")


def _bounded(items: list[T], limit: int) -> tuple[list[T], int]:
    """The first `limit` items (all when `limit` <= 0) and how many were left out."""
    if limit <= 0 or len(items) <= limit:
        return items, 0
    return items[:limit], len(items) - limit


def _more(hidden: int) -> str:
    return f"... and {hidden} more not shown"


def _wrap(text: str, first: str, rest: str | None = None) -> list[str]:
    """`text` wrapped to WIDTH; continuation lines indented by `rest` (default: as wide as `first`)."""
    return list(_wrapped(text, first, " " * len(first) if rest is None else rest))


@lru_cache(maxsize=8192)  # the ranks of a pod print the same causes: wrapped once
def _wrapped(text: str, first: str, rest: str) -> tuple[str, ...]:
    import textwrap  # here: listing graphs wraps nothing and starts faster without it

    return tuple(
        textwrap.wrap(
            text,
            WIDTH,
            initial_indent=first,
            subsequent_indent=rest,
            break_long_words=False,
            break_on_hyphens=False,
        )
        or [first.rstrip()]
    )


def _field(name: str, text: str) -> list[str]:
    """`  name  text`, continuation lines aligned under the text."""
    head = f"{_INDENT}{name:<5} "
    return _wrap(text, head, " " * len(head))


def _side(tag: str, canon: CanonicalModule) -> str:
    module = canon.module
    label = module.info.label or module.path or "(text)"
    parts = [
        f"{tag}  {label}",
        module.name,
        f"{plural(module.instruction_count, 'instruction')}, "
        f"{plural(len(module.computations), 'computation')}",
        f"fingerprint {canon.fingerprint}",
    ]
    if module.info.graph_hash:
        parts.append(f"graph hash {module.info.graph_hash}")
    return _INDENT + "  ".join(parts)


def _moved_table(mapping: tuple[Moved, ...], limit: int) -> list[str]:
    moved = [m for m in mapping if m.left != m.right]
    if not moved:
        return []
    shown, hidden = _bounded(moved, limit)
    # Inputs and outputs in one cause (one reason reordered both): say which each row is.
    mixed = len({m.what for m in moved}) > 1
    cells = [(f"{m.what} A#{m.left}" if mixed else f"A#{m.left}", f"B#{m.right}", m.shape) for m in shown]
    wa = max(len(a) for a, _, _ in cells)
    wb = max(len(b) for _, b, _ in cells)
    lines = []
    for n, (a, b, shape) in enumerate(cells):
        head = f"{_INDENT}{'moved' if n == 0 else '':<5} "
        lines.append(f"{head}{a:<{wa}} -> {b:<{wb}}  {shape}")
    pad = " " * (len(_INDENT) + 6)
    if hidden:
        lines.append(pad + _more(hidden))
    kept = len(mapping) - len(moved)
    if kept:
        lines.append(pad + f"({kept} in the same place)")
    return lines


def _change_lines(cause: Cause, limit: int) -> list[str]:
    if len(cause.changes) < 2:
        return []  # a single change is already spelled out in the summary
    shown, hidden = _bounded(list(cause.changes), limit)
    names = [c.left if c.left == c.right else f"{c.left} -> {c.right}" for c in shown]
    width = max(len(n) for n in names)
    lines = []
    for n, (name, c) in enumerate(zip(names, shown, strict=True)):
        head = f"{_INDENT}{'diff' if n == 0 else '':<5} "
        lines.append(f"{head}{name:<{width}}  {c.what}: {c.old or '(none)'} -> {c.new or '(none)'}")
    if hidden:
        lines.append(" " * (len(_INDENT) + 6) + _more(hidden))
    return lines


def _sources(causes: list[Cause], limit: int) -> list[str]:
    """`at` the user's lines, `via` the library lines (alone when no instruction names a line of
    the user's: then `at` would cite torch's code as if it were the user's)."""
    user: list[str] = []
    library: list[str] = []
    for c in causes:
        u, lib = split_user_lines(c.sources, c.library)
        user += u
        library += lib
    found = list(dict.fromkeys(short_location(s) for s in user))
    library = [s for s in dict.fromkeys(short_location(s) for s in library) if s not in found]
    lines: list[str] = []
    if found:
        shown, hidden = _bounded(found, limit)
        lines = _field("at", ", ".join(shown) + (f", {_more(hidden)}" if hidden else ""))
    if library:
        lines += _field(
            "via", ", ".join(library[:3]) + (f", {_more(len(library) - 3)}" if len(library) > 3 else "")
        )
    return lines


def _group(causes: list[Cause], entry: str, limit: int) -> list[str]:
    """One block per cause kind: the summary (or one bullet per cause), where, and the fix once."""
    first = causes[0]
    lines: list[str] = []
    if len(causes) == 1:
        tag = f"{first.kind} (expected)" if first.info else str(first.kind)
        lines += _wrap(f"{tag}: {short_locations_in(first.summary)}", "", _INDENT)
        if first.computation and first.computation != entry:
            lines += _field("in", first.computation)
        lines += _sources(causes, limit)
        lines += _change_lines(first, limit)
        lines += _moved_table(first.mapping, limit)
    else:
        lines.append(f"{first.kind} ({len(causes)} causes):")
        shown, hidden = _bounded(causes, limit)
        for cause in shown:
            where = f" (in {cause.computation})" if cause.computation and cause.computation != entry else ""
            lines += _wrap(short_locations_in(cause.summary) + where, f"{_INDENT}- ", _INDENT + "  ")
        if hidden:
            lines.append(_INDENT + _more(hidden))
        lines += _sources(causes, limit)
    fix = f"{first.hint} [{first.fix_id}]" if first.fix_id else first.hint
    lines += _field("fix", short_locations_in(fix))
    return lines


def printed(module: Module | None, name: str) -> str:
    """Lazy-IR nodes are numbers; print them as the dump does (`%12`)."""
    return f"%{name}" if module is not None and module.format == "lazy-ir" and name.isdigit() else name


def _changed_block(result: DiffResult, limit: int) -> list[str]:
    from xlagraph.diagnose.changed import changed_instructions

    left, right = changed_instructions(result.differences)
    if not (left or right):
        return []
    lines = ["changed instructions"]
    for tag, names, canon in (("A", left, result.left), ("B", right, result.right)):
        shown, hidden = _bounded([printed(canon.module, n) for n in names], limit)
        text = ", ".join(shown) if shown else "-"
        if hidden:
            text += f", {_more(hidden)}"
        head = f"{_INDENT}{tag} ({len(names)}): "
        lines += _wrap(text, head, " " * len(head))
    return lines


def headline(result: DiffResult) -> str:
    """`identical`, `different: 2 causes`, or `undetermined: ...` when only elided values could differ."""
    if result.causes:
        return f"different: {plural(len(result.causes), 'cause')}"
    if result.unseen:
        return (
            f"undetermined: the graphs print the same, but {plural(len(result.unseen), 'constant')} "
            "whose values the dumps do not print ({...}) may hold other values"
        )
    return "identical"


def render_diff_text(result: DiffResult, max_changes: int = 20) -> str:
    """The diff report: verdict, the two graphs, causes with fixes, changed instructions, notes.

    `max_changes` bounds every list (changes, permutation rows, instruction names); 0 shows all.
    """
    from xlagraph.graphs import one_compile_stages

    differences = list(result.differences)
    verdict = headline(result)
    if stages := one_compile_stages(result.left.module.info, result.right.module.info):
        # The compiler's rewrites, not a recompile: no recognizer applies, so name none.
        verdict = "different: one compile at two stages (no recompile)" if result.causes else verdict
        head = [verdict, _side("A", result.left), _side("B", result.right), ""]
        return "\n".join(head + _wrap(f"note: {stages}", "", _INDENT)) + "\n"
    lines = [verdict, _side("A", result.left), _side("B", result.right)]
    groups: dict[str, list[Cause]] = {}
    for cause in differences:
        groups.setdefault(str(cause.kind), []).append(cause)
    for causes in groups.values():
        lines.append("")
        lines += _group(causes, result.left.module.entry.name, max_changes)
    changed = _changed_block(result, max_changes)
    if changed:
        lines += ["", *changed]
    if result.notes:
        lines.append("")
        for note in result.notes:
            lines += _wrap(f"note: {note}", "", _INDENT)
    return "\n".join(lines) + "\n"


def render_graphs_text(listing: GraphListing) -> str:
    """A table of the graphs of a source and a closing line counting the variants."""
    header = (
        "index",
        "name",
        "instructions",
        "computations",
        "graph hash",
        "fingerprint",
        "variant",
        "stage",
    )
    # A --xla_dump_to compile is one row, its stages (before and after optimizations) named in it.
    groups = listing.compiles
    staged = any(len(g) > 1 for g in groups)
    if staged:
        header = (*header[:-1], "stages")
    rows = [
        (
            str(g[0].index),
            g[0].name,
            str(g[0].instructions),
            str(g[0].computations),
            g[0].graph_hash or "-",
            g[0].fingerprint,
            g[0].variant,
            ", ".join(
                f"#{r.index} {r.stage or '-'}" + (f" ({r.instructions})" if r is not g[0] else "") for r in g
            )
            if staged
            else g[0].stage or "-",
        )
        for g in groups
    ]
    numeric = {0, 2, 3}
    widths = [max(len(cells[i]) for cells in [header, *rows]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        out = [
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(out).rstrip()

    lines = [line(header), *(line(r) for r in rows)]
    lines += [f"note: {n}" for n in listing.notes]
    variants = listing.variants
    named = ", ".join(
        variants if len(variants) <= _MAX_VARIANTS_NAMED else (*variants[:10], "...", variants[-1])
    )
    counted = plural(len(listing.rows), "graph")
    if staged:
        counted = f"{plural(len(groups), 'compile')} ({counted}: each compile at every stage it was dumped)"
    closing = (
        f"{counted}, {listing.unique} unique ({'variant' if len(variants) == 1 else 'variants'} {named})"
    )
    hashes = listing.unique_graph_hashes
    if hashes:
        closing += f"; {hashes} graph {'hash' if hashes == 1 else 'hashes'}"
    lines.append(closing)
    if hashes > listing.unique:
        lines.append(
            "note: more graph hashes than unique graphs: some graphs differ only in the order of their "
            "inputs or outputs, or in values the text does not print; `xlagraph diff` them"
        )
    pair = _first_recompile(listing)
    if pair is not None:
        a, b = pair
        lines.append(
            f"why {b.variant} differs from {a.variant}: "
            f"xlagraph diff {_spec(listing, a.index)} {_spec(listing, b.index)}"
        )
    return "\n".join(lines) + "\n"


def _first_recompile(listing: GraphListing) -> tuple[GraphRow, GraphRow] | None:
    """The first graph whose variant differs from the first graph of the same program and stage.

    A program is the module name without its trailing number (`IrToHlo.90` -> `IrToHlo`): a
    dump of several jitted functions holds several programs, which differ without recompiling.
    """
    first: dict[tuple[str, str], GraphRow] = {}
    for row in listing.rows:
        head = first.setdefault((row.stage, _program(row.name)), row)
        if row.variant != head.variant:
            return head, row
    return None


def _program(name: str) -> str:
    base, dot, number = name.rpartition(".")
    return base if dot and number.isdigit() else name


def _spec(listing: GraphListing, index: int) -> str:
    return f"{shlex.quote(listing.path)}#{index}"
