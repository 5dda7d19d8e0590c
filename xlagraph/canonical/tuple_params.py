"""Rule 1 for the entry's tuple-shaped parameters: their elements, read through get-tuple-element
(chains of them for nested tuples), are the inputs.

PyTorch/XLA wraps its parameters in one tuple past 3,200 of them, and XLA itself passes every
parameter as its flattened leaf buffers, so an element read by index is an input of its own and
the tuple around it is plumbing. A tuple (parameter or element) that anything else reads whole (an
output, a call, a while loop; a `tuple` holding it where that is read whole) stays one input, and
its get-tuple-elements stay ordinary instructions: an input is never counted twice.

Inputs are numbered in parameter order, a tuple whose elements are the inputs taking one number
per element (recursively, an element nothing reads one too): a module whose parameters are all
read whole keeps the dump's numbers, and one wrapped tuple of arrays numbers its elements by
tuple index. Two get-tuple-elements of the same element are one input.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from xlagraph.ir import Computation, strip_layout

__all__ = ["Forwarding", "shape_tree", "unwrap"]

_DIMS = re.compile(r"\[[^\]]*\]")

# A shape's structure: None for an array (or token), a tuple of subtrees for a tuple.
Tree = tuple | None
Key = tuple[str, tuple[int, ...]]  # a tuple parameter, and the path of indices to one element


class Forwarding(NamedTuple):
    """`alias`: gte (or duplicate element read) -> the instruction it forwards to; `inputs`: every
    input -> its number; `unwrapped`: the entry's tuple parameters whose elements are the inputs;
    `reads`: the other reads of their elements (a second read, a tuple of inputs), which like an
    unread parameter are never dead code, whatever their order in the text."""

    alias: dict[str, str]
    inputs: dict[str, int]
    unwrapped: tuple[str, ...]
    reads: frozenset[str] = frozenset()


def shape_tree(shape: str) -> Tree:
    """`(f32[2]{0}, (s32[], f32[3]))` -> `(None, (None, None))`; `f32[2]` -> None; `()` -> `()`."""
    text = _DIMS.sub("", strip_layout(shape))
    stack: list[list[Tree]] = [[]]
    pending = False  # characters of an array type since the last separator
    for ch in text:
        if ch == "(":
            stack.append([])
            pending = False
        elif ch in "),":
            if pending:
                stack[-1].append(None)
            pending = False
            if ch == ")" and len(stack) > 1:
                done = tuple(stack.pop())
                stack[-1].append(done)
        elif not ch.isspace():
            pending = True
    if pending:
        stack[-1].append(None)
    return stack[0][0] if stack[0] else None


def _subtree(tree: Tree, path: tuple[int, ...]) -> Tree:
    for k in path:
        tree = tree[k]  # type: ignore[index]
    return tree


def _index(ins_attr: str | None) -> int | None:
    return int(ins_attr) if ins_attr is not None and ins_attr.isdigit() else None


def unwrap(comp: Computation, alias: dict[str, str]) -> Forwarding:
    """The entry's inputs, given tuple forwarding's `alias` (gte of a tuple -> element), which this
    completes with duplicate element reads; `alias` is returned with every chain resolved."""
    params = sorted(
        (i for i in comp.instructions if i.opcode == "parameter"), key=lambda i: i.parameter_number
    )
    trees = {p.name: shape_tree(p.shape) if p.shape.startswith("(") else None for p in params}
    # Every tuple parameter and every get-tuple-element that reads an element of one, by path.
    held: dict[str, Key] = {p: (p, ()) for p, t in trees.items() if t is not None}
    parent: dict[str, str] = {}
    for ins in comp.instructions:
        if ins.opcode != "get-tuple-element" or len(ins.operands) != 1 or ins.name in alias:
            continue
        k = _index(ins.attribute("index"))
        source = alias.get(ins.operands[0], ins.operands[0])
        if k is None or source not in held:
            continue
        param, path = held[source]
        tree = _subtree(trees[param], path)
        if tree is not None and k < len(tree):
            held[ins.name] = (param, (*path, k))
            parent[ins.name] = source
    # What is read whole: an output, or an operand of anything but an element read or a tuple (a
    # tuple's elements are read whole where the tuple is: an output, a call's operand).
    whole: set[Key] = set()
    by_index: set[Key] = set()
    by_name = comp.by_name
    seen: set[str] = set()

    def read_whole(name: str) -> None:
        stack = [name]
        while stack:
            o = stack.pop()
            o = alias.get(o, o)
            if o in seen:
                continue
            seen.add(o)
            if o in held:
                whole.add(held[o])
            elif (ins := by_name.get(o)) is not None and ins.opcode == "tuple":
                stack.extend(ins.operands)

    read_whole(comp.root.name)
    for ins in comp.instructions:
        if ins.name in parent:
            by_index.add(held[parent[ins.name]])
        elif ins.name not in alias and ins.opcode != "tuple":
            for o in ins.operands:
                read_whole(o)
    unwrapped: set[Key] = {k for p in params if (k := (p.name, ())) in by_index and k not in whole}
    leaves: list[tuple[str, Key]] = []
    reads: set[str] = set()  # elements that are inputs, in instruction order
    first: dict[Key, str] = {}
    for name, (param, path) in held.items():
        if not path or (param, path[:-1]) not in unwrapped:
            continue  # a parameter, or an ordinary get-tuple-element of an input read whole
        key = (param, path)
        if key in first:
            alias[name] = first[key]
            reads.add(name)
            continue
        first[key] = name
        if _subtree(trees[param], path) is not None and key in by_index and key not in whole:
            unwrapped.add(key)
            reads.add(name)
        else:
            leaves.append((name, key))

    def size(key: Key) -> int:  # numbers an input (or an unwrapped tuple's inputs) take
        if key not in unwrapped:
            return 1
        arity = len(_subtree(trees[key[0]], key[1]))  # type: ignore[arg-type]
        return max(1, sum(size((key[0], (*key[1], i))) for i in range(arity)))

    inputs: dict[str, int] = {}
    offset: dict[str, int] = {}
    n = 0
    for p in params:
        offset[p.name] = n
        n += size((p.name, ()))
        if (p.name, ()) not in unwrapped:
            inputs[p.name] = offset[p.name]
    for name, (param, path) in leaves:
        inputs[name] = offset[param] + sum(
            size((param, (*path[:j], i))) for j in range(len(path)) for i in range(path[j])
        )
    for k, v in alias.items():
        while v in alias:
            v = alias[v]
        alias[k] = v
    unwrapped_params = tuple(p.name for p in params if (p.name, ()) in unwrapped)
    return Forwarding(alias, inputs, unwrapped_params, frozenset(reads))
