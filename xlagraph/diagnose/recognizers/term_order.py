"""`parameter_permutation` of a sum's terms: the terms of a sum added in another order (a dict of
penalty terms whose entry was popped and inserted again, so it moved last). The matcher pairs
such a chain term to term by content (rust/src/matching/sum_terms.rs, phase tag `sum-terms`):
what differs is the chain's nodes reading their terms in another order, the inputs numbered in
the order the terms were traced and, where the moved term's scalar (its weight) now differs
from a term's it equalled, that scalar split from the input torch_xla shared between them. One
reordering, at the line that moved the term and the call that made it move.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_user_location, source_line, split_location
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._source import MAX_SCANNED_LINES, calls_of_function
from xlagraph.diagnose.recognizers._statements import enclosing_at, lines_where
from xlagraph.diagnose.recognizers.shared_scalar import split_from
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of

__all__ = ["HINT", "RECOGNIZER"]

HINT = fix("parameter_permutation.sum_terms")
_TAG = "sum-terms"
# A loop over a container's entries (`for fn, w in self.terms.values()`, `in penalties`).
_ITERATED = re.compile(r"\bin\s+((?:self\.)?\w+)\b")


def _region(evidence: Evidence) -> tuple[set[str], set[str]]:
    """A's and B's instructions of the reordered chains: the pairs the matcher made by content,
    and the chains' roots that read them."""
    left, to_b = evidence.left.entry, evidence.entry_match_left
    tagged = {a for a, t in evidence.entry_phase.items() if t == _TAG}
    by_name = left.computation.by_name
    roots = {
        u
        for a in tagged
        for u in users_of(left).get(a, ())
        if u in to_b and by_name[u].opcode == by_name[a].opcode
    }
    region = tagged | roots
    return region, {to_b[a] for a in region}


def _split_scalars(evidence: Evidence, pending: tuple[Cause, ...], region_b: set[str]) -> dict[int, set[str]]:
    """The added-input causes whose inputs are all scalars a term of the chain reads, split from
    an input A shared between terms of equal value: cause index -> A's and B's readers."""
    right, left = evidence.right.entry, evidence.left.entry
    gone = {p for c in pending if c.kind is CauseKind.PARAMETER_REMOVED for p in c.left}
    out: dict[int, set[str]] = {}
    for i, c in enumerate(pending):
        if c.kind is not CauseKind.PARAMETER_ADDED or c.info:
            continue
        params = [p for p in c.right if p in right.param_number]
        if not params or len(params) != len(c.right):
            continue
        readers: set[str] = set()
        for p in params:
            mine = set(users_of(right).get(p, ()))
            scalar = strip_layout(right.instruction(p).shape).endswith("[]")
            q = split_from(evidence, p, gone, same_line=True) if scalar else ""
            if not q or not mine & region_b:
                break
            readers |= mine | set(users_of(left).get(q, ()))
        else:
            out[i] = readers
    return out


def _moves(tree: ast.Module, name: str) -> Iterator[int]:
    """Lines that take an entry out of `name` (`name.pop(k)`, `del name[k]`): a key put back
    goes last in a dict's order."""
    for n in ast.walk(tree):
        pops = isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "pop"
        if pops and ast.unparse(n.func.value) == name:  # type: ignore[attr-defined]
            yield n.func.end_lineno or n.lineno  # type: ignore[attr-defined]
        elif isinstance(n, ast.Delete) and any(
            isinstance(t, ast.Subscript) and ast.unparse(t.value) == name for t in n.targets
        ):
            yield n.lineno


def _order_lines(sources: tuple[str, ...]) -> list[str]:
    """Where the terms' order moved: in the file of a cited line that sums a container's
    entries (`self.X`, `X`), the lines that pop from it (a re-inserted key goes last), then the
    calls of their function made inside a loop (the re-registration while training)."""
    found: dict[str, None] = {}
    for loc in sources:
        file, line = split_location(loc)
        m = _ITERATED.search(source_line(file, line).split("#", 1)[0]) if line else None
        if not m:
            continue
        name = m.group(1)
        for at in lines_where([file], lambda tree, name=name: _moves(tree, name), MAX_SCANNED_LINES):
            found.setdefault(at)
            for call in calls_of_function(at, limit=8):
                if any(isinstance(s, (ast.For, ast.While)) for s, _ in enclosing_at(call)[2]):
                    found.setdefault(call)
    return list(found)[:4]


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    if _TAG not in evidence.entry_phase.values():
        return NOTHING
    region_a, region_b = _region(evidence)
    split = _split_scalars(evidence, pending, region_b)
    reads_a = region_a | {n for r in split.values() for n in r}
    reads_b = region_b | {n for r in split.values() for n in r}
    regions = [
        i
        for i, c in enumerate(pending)
        if c.kind is CauseKind.STRUCTURE and c.left and set(c.left) <= reads_a and set(c.right) <= reads_b
    ]
    if not any(set(pending[i].left) & region_a for i in regions):
        return NOTHING
    moved = [i for i, c in enumerate(pending) if c.kind is CauseKind.PARAMETER_PERMUTATION]
    used = [*regions, *moved, *split]
    summary = "the terms of a sum are added in another order (a term moved in the container it sums)"
    if split:
        summary += (
            "; the moved term's scalar now differs from a term's it equalled, so B takes it as an input "
            "of its own (torch_xla makes one input of equal Python scalars)"
        )
    cause = merge(CauseKind.PARAMETER_PERMUTATION, summary, [pending[i] for i in used])
    lines = _order_lines(tuple(s for s in cause.sources if is_user_location(s)))
    if lines:
        # The entry that moved is found: its lines and fix (else the permutation recognizer's,
        # which finds where a loop or a sort ordered them).
        cause = replace(cause, sources=tuple(dict.fromkeys([*lines, *cause.sources]))[:6], hint=HINT)
    return Recognized((cause,), frozenset(used))


RECOGNIZER = Recognizer("term_order", _recognize)
