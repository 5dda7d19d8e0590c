"""`swap_terms`: the terms of a sum added in another order (issue 37), as a dict of penalty terms
iterated in another order traces it: a chain of one associative, commutative opcode
(`((a + b) + c)`) of three or more terms, each computed its own way, has its first term moved
last (`((b + c) + a)`); each term's subgraph (its constants: a mean's divisor, a reshape's size)
moves with it. The graphs differ (another program, another floating-point sum): a correct diff
names the reordering, nothing else, and moves no input or output.
"""

from __future__ import annotations

import random
import re

from tests.metamorphic.transforms import REORDERINGS, Entry, Expected, Ins, NotApplicable, _split

__all__ = ["swap_terms"]

_CHAINED = frozenset({"add", "multiply", "maximum", "minimum", "and", "or"})
_LAYOUT = re.compile(r"\{[^}]*\}")
_MIN_TERMS = 3


def _users(entry: Entry) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for i in entry.body:
        for o in i.operands:
            out.setdefault(o, []).append(i.name)
    return out


def _signature(by: dict[str, Ins], name: str, memo: dict[str, str]) -> str:
    """What a subgraph computes, its inputs by shape alone (`h0`'s view): terms of one signature
    are interchangeable, so moving one is no reordering a diff could see."""
    if name not in memo:
        i = by[name]
        head = f"{i.opcode}:{_LAYOUT.sub('', i.shape)}"
        if i.opcode == "constant":
            head += f"={i.args.strip()}"
        inner = ",".join(_signature(by, o, memo) for o in i.operands)
        memo[name] = f"{head}({inner}){i.rest.split('metadata')[0]}"
    return memo[name]


def _inner(by: dict[str, Ins], users: dict[str, list[str]], o: str, parent: str) -> bool:
    """`o` continues its reader `parent`'s chain: the same opcode and shape, binary, read by it
    alone."""
    i, p = by.get(o), by[parent]
    return (
        i is not None
        and (i.opcode, _LAYOUT.sub("", i.shape)) == (p.opcode, _LAYOUT.sub("", p.shape))
        and users.get(o) == [parent]
        and len(i.operands) == 2
    )


def _walk(by: dict[str, Ins], users: dict[str, list[str]], n: str, nodes: list, slots: list) -> None:
    nodes.append(n)
    for k, o in enumerate(by[n].operands):
        if _inner(by, users, o, n):
            _walk(by, users, o, nodes, slots)
        else:
            slots.append((n, k))


def _chains(entry: Entry) -> list[tuple[list[str], list[tuple[str, int]], list[str]]]:
    """Each maximal chain as (its nodes, the (node, operand position) of each term left to right,
    the terms)."""
    by, users = entry.by_name(), _users(entry)
    out = []
    for root in entry.body:
        if root.opcode not in _CHAINED or len(root.operands) != 2 or root.root:
            continue
        if any(_inner(by, users, root.name, u) for u in users.get(root.name, [])):
            continue  # not the top of its chain
        nodes: list[str] = []
        slots: list[tuple[str, int]] = []
        _walk(by, users, root.name, nodes, slots)
        if len(slots) >= _MIN_TERMS:
            out.append((nodes, slots, [by[n].operands[k] for n, k in slots]))
    return out


def _cone(by: dict[str, Ins], name: str) -> set[str]:
    seen, stack = set(), [name]
    while stack:
        n = stack.pop()
        if n not in seen and n in by:
            seen.add(n)
            stack += by[n].operands
    return seen


def swap_terms(entry: Entry, exp: Expected, rng: random.Random) -> None:
    by, memo = entry.by_name(), {}
    live = entry.live()
    chains = [
        c
        for c in _chains(entry)
        if c[0][0] in live and len({_signature(by, t, memo) for t in c[2]}) == len(c[2])
    ]
    if not chains:
        raise NotApplicable("no chain of 3 or more distinct terms")
    nodes, slots, terms = rng.choice(chains)
    moved = [*terms[1:], terms[0]]
    for (n, k), t in zip(slots, moved, strict=True):
        ins = by[n]
        parts = _split(ins.args)
        head, _, last = parts[k].rpartition(" ")
        sig = "%" if last.startswith("%") else ""
        parts[k] = f"{head} {sig}{t}".strip()
        ins.args = ", ".join(parts)
    # Each instruction after its operands again (a node now reads a term defined below it).
    order: list[Ins] = []
    done: set[str] = set()

    def emit(i: Ins) -> None:
        if i.name in done:
            return
        done.add(i.name)
        for o in i.operands:
            if o in by:
                emit(by[o])
        order.append(i)

    for i in list(entry.body):
        emit(i)
    entry.body = order
    exp.terms = tuple(nodes)
    exp.kept = frozenset(n for t in terms for n in _cone(by, t))


# `apply` runs it by name, as it runs `swap_updates` (this module reads transforms, not back).
REORDERINGS["swap_terms"] = swap_terms
