"""The canonicalization rules written plainly, one walk per rule: the oracle the compiled core
(rust/src/canon/, the library's only engine: `xlagraph.canonical.canonicalize`) must agree
with exactly, on every field (tests/test_canonical_speed_equivalence.py). Kept with the tests:
the library never runs it. Its per-instruction rules (content keys, attribute normalization, side
effects' hashes) are tests/oracles/hashes_reference.py.

Rule 1 for the entry's tuple-shaped parameters (`unwrap`): their elements, read through
get-tuple-element (chains of them for nested tuples), are the inputs. PyTorch/XLA wraps its
parameters in one tuple past 3,200 of them, and XLA itself passes every parameter as its
flattened leaf buffers, so an element read by index is an input of its own and the tuple around
it is plumbing. A tuple (parameter or element) that anything else reads whole (an output, a call,
a while loop; a `tuple` holding it where that is read whole) stays one input, and its
get-tuple-elements stay ordinary instructions: an input is never counted twice. Inputs are
numbered in parameter order, a tuple whose elements are the inputs taking one number per element
(recursively, an element nothing reads one too): a module whose parameters are all read whole
keeps the dump's numbers, and one wrapped tuple of arrays numbers its elements by tuple index.
Two get-tuple-elements of the same element are one input.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

from tests.oracles.hashes_reference import (
    EffectKeyError,
    IotaError,
    content_key,
    effect_hash_map,
    plumbing_attributes,
    stable_hash,
)
from xlagraph._gc import paused_gc
from xlagraph.canonical.model import CanonicalComputation, CanonicalModule
from xlagraph.errors import ParseError
from xlagraph.ir import Computation, Instruction, Module, strip_layout

__all__ = ["Forwarding", "canonicalize", "declared_shapes", "layout_of", "shape_tree", "unwrap"]

_DIMS = re.compile(r"\[[^\]]*\]")
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\](\{[^{}]*\})?")
_ARRAY_SHAPE = re.compile(r"[a-z][a-z0-9]*\[[^\]]*\]")


# --- shapes --------------------------------------------------------------------------------------


def declared_shapes(shape: str) -> str:
    """The array shapes a tuple's printed shape declares, sorted (`(f32[8]{0}, s32[])` ->
    `f32[8],s32[]`): a root tuple's declaration is its own, besides its operands', and sorting
    keeps a permutation of the outputs out of it."""
    return ",".join(sorted(_ARRAY_SHAPE.findall(strip_layout(shape).replace(" ", ""))))


@lru_cache(maxsize=65536)
def layout_of(shape: str) -> str:
    """The layout of a shape when it is not XLA's default, else "".

    `f32[4,8]{1,0}` (the default: minor-to-major descending) and `f32[4,8]` (not printed) are
    both ""; `f32[4,8]{0,1}` is `{0,1}`; tiling and memory space (`{1,0:T(8,128)S(1)}`) are kept.
    A tuple gives its elements' layouts joined by `;` when any is not the default.
    """
    if "{" not in shape:
        return ""
    found = []
    for m in _ARRAY.finditer(shape):
        layout = m.group(3)
        if layout is None:
            found.append("")
            continue
        rank = 0 if not m.group(2).strip() else m.group(2).count(",") + 1
        default = "{" + ",".join(str(d) for d in range(rank - 1, -1, -1)) + "}"
        found.append("" if layout.replace(" ", "") == default else layout.replace(" ", ""))
    return ";".join(found) if any(found) else ""


def effect_hashes(
    comp: Computation, candidates: Iterable[str], h1: dict[str, int], callee_hash: dict[str, int]
) -> tuple[int, ...]:
    """Sorted `effect_hash_map` values: what a computation's unread side effects do."""
    return tuple(sorted(effect_hash_map(comp, candidates, h1, callee_hash).values()))


# --- rule 1 for tuple parameters -----------------------------------------------------------------

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


# --- the rules -----------------------------------------------------------------------------------


def forward_tuples(comp: Computation, unwrap_parameters: bool) -> Forwarding:
    """Rule 1: where each get-tuple-element really reads from (`alias`), and the inputs with
    their numbers; the entry's tuple parameters are unwrapped by `unwrap`."""
    by_name = comp.by_name
    alias: dict[str, str] = {}
    for ins in comp.instructions:
        if ins.opcode != "get-tuple-element" or len(ins.operands) != 1:
            continue
        index = ins.attribute("index")
        if index is None or not index.isdigit():
            continue
        source = alias.get(ins.operands[0], ins.operands[0])
        target = by_name.get(source)
        if target is not None and target.opcode == "tuple" and int(index) < len(target.operands):
            element = target.operands[int(index)]
            alias[ins.name] = alias.get(element, element)
    if unwrap_parameters:
        return unwrap(comp, alias)
    return Forwarding(
        alias, {i.name: i.parameter_number for i in comp.instructions if i.opcode == "parameter"}, ()
    )


def output_names(comp: Computation, alias: dict[str, str]) -> tuple[str, ...]:
    """Rule 1 at the root: a tuple result is flattened into its elements."""
    by_name = comp.by_name
    out: list[str] = []
    stack = [comp.root.name]
    while stack:
        name = stack.pop()
        name = alias.get(name, name)
        ins = by_name[name]
        if ins.opcode == "tuple" and ins.operands:
            stack.extend(reversed(ins.operands))
        else:
            out.append(name)
    return tuple(out)


def live_order(
    comp: Computation, outputs: tuple[str, ...], alias: dict[str, str], inputs: dict[str, int]
) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """Rule 2: the instructions the outputs depend on, operands first, with forwarded operands."""
    by_name = comp.by_name
    operands: dict[str, tuple[str, ...]] = {}
    order: list[str] = []
    done: set[str] = set()
    entered: set[str] = set()
    for out in outputs:
        if out in done:
            continue
        stack = [(out, False)]
        while stack:
            name, expanded = stack.pop()
            if expanded:
                if name not in done:
                    done.add(name)
                    order.append(name)
                continue
            if name in done:
                continue
            if name in entered:
                # Reached again before its operands are done: it is its own operand.
                raise _cycle(comp, by_name[name])
            entered.add(name)
            stack.append((name, True))
            if name in inputs:  # a parameter, or an element of a tuple parameter
                operands[name] = ()
                continue
            ops = by_name[name].operands
            if alias and not alias.keys().isdisjoint(ops):
                ops = tuple(alias.get(o, o) for o in ops)
            operands[name] = ops
            for o in reversed(ops):
                if o not in done:
                    stack.append((o, False))
    # Inputs that nothing reads are inputs all the same, not dead code.
    for ins in comp.instructions:
        if ins.name in inputs and ins.name not in done:
            done.add(ins.name)
            order.append(ins.name)
            operands[ins.name] = ()
    return order, operands


def _reachable(comp: Computation) -> set[str]:
    by_name = comp.by_name
    seen = {comp.root.name}
    stack = [comp.root.name]
    while stack:
        ins = by_name.get(stack.pop())
        for o in ins.operands if ins is not None else ():
            if o not in seen:
                seen.add(o)
                stack.append(o)
    return seen


def _canonicalize_computation(
    comp: Computation, callee_hash: dict[str, int], is_entry: bool
) -> CanonicalComputation:
    alias, inputs, unwrapped, reads = forward_tuples(comp, unwrap_parameters=is_entry)
    outputs = output_names(comp, alias)
    order, operands = live_order(comp, outputs, alias, inputs)
    by_name = comp.by_name

    keys: dict[str, int] = {}
    param_number: dict[str, int] = {}
    for name in order:
        ins = by_name[name]
        is_param = name in inputs
        if is_param:
            param_number[name] = inputs[name]
        try:
            keys[name] = stable_hash(content_key(ins, callee_hash, parameter=is_param))
        except IotaError as e:
            raise _Bad(comp, ins, str(e)) from None

    h0 = _merkle(order, operands, keys, by_name, {})
    if is_entry:
        # Only the entry's interface is canonicalized away (and reported as a permutation).
        ranked = sorted(range(len(outputs)), key=lambda k: h0[outputs[k]])
        canonical_outputs = [outputs[k] for k in ranked]
        walk = _walk(canonical_outputs, operands)
        rank = {n: i for i, n in enumerate(p for p in walk if p in param_number)}
        for name in sorted(
            (p for p in param_number if p not in rank), key=lambda p: (keys[p], param_number[p])
        ):
            rank[name] = len(rank)
    else:
        # A called computation is compared with its own numbering and output order: its caller
        # passes operands by position and reads results by tuple index, so `compare(p0, p1)` vs
        # `compare(p1, p0)` (a sort comparator) or `tuple(a, b)` vs `tuple(b, a)` differ.
        walk = _walk(list(outputs), operands)
        rank = dict(param_number)
    h1 = _merkle(order, operands, keys, by_name, rank)

    if len(order) == len(comp.instructions):
        dead = plumbing = ()
    else:
        reachable = _reachable(comp)
        live = set(order)
        dead = tuple(
            i.name
            for i in comp.instructions
            if i.name not in reachable and i.opcode != "parameter" and i.name not in reads
        )
        plumbing = tuple(i.name for i in comp.instructions if i.name in reachable and i.name not in live)
    # Strings enter a computation's hash as their stable hashes: `hash(str)` is seeded per process,
    # and a fingerprint (and the canonical order built on these hashes) must not depend on it.
    skeleton = stable_hash(_tuple_skeleton(comp.root.shape) + _forwarded_root(comp, keys))
    layouts = {n: lay for n in order if (lay := layout_of(by_name[n].shape))}
    # Layouts stay out of h0/h1 (matching pairs instructions whatever their layout) but not out
    # of the computation's identity: a layout or memory-space change is a recompile.
    layout_key = tuple(sorted({(h1[n], stable_hash(lay)) for n, lay in layouts.items()}))  # CSE-blind
    if is_entry:
        walked = set(walk)
        unused = sorted(keys[p] for p in param_number if p not in walked)
        unused += sorted(
            stable_hash(_tuple_skeleton(s) + "|" + declared_shapes(s))
            for p in unwrapped
            if (s := by_name[p].shape)
        )
        comp_hash = hash((skeleton, tuple(sorted(h1[o] for o in outputs)), tuple(unused), layout_key))
    else:
        signature = tuple(sorted((param_number[p], keys[p]) for p in param_number))
        comp_hash = hash((skeleton, tuple(h1[o] for o in outputs), signature, layout_key))
    try:
        effects = effect_hashes(comp, (*dead, *plumbing), h1, callee_hash)
    except EffectKeyError as e:
        raise _Bad(comp, e.ins, e.message) from None
    if effects:
        comp_hash = hash((comp_hash, effects))
    return CanonicalComputation(
        computation=comp,
        order=tuple(order),
        operands=operands,
        outputs=outputs,
        keys=keys,
        h0=h0,
        h1=h1,
        param_number=param_number,
        param_rank=rank,
        walk=tuple(walk),
        plumbing=plumbing,
        dead=dead,
        hash=comp_hash,
        layouts=layouts,
    )


def _forwarded_root(comp: Computation, keys: dict[str, int]) -> str:
    """What a root that forwarding removed (a tuple) declares itself: its element shapes and its
    attributes, `|`-prefixed; "" for a root that is an instruction of its own."""
    if comp.root.name in keys:
        return ""
    text = plumbing_attributes(comp.root)
    return "|" + declared_shapes(comp.root.shape) + ("|" + text if text else "")


def _tuple_skeleton(shape: str) -> str:
    """`(f32[2,3], (s32[], f32[3]))` -> `(,(,))`: how outputs nest, which flattening forgets."""
    if not shape.startswith("("):
        return ""
    return "".join(ch for ch in _DIMS.sub("", strip_layout(shape)) if ch in "(),")


class _Bad(Exception):
    """An instruction canonicalization cannot accept; `_canonicalize` adds the module's path."""

    def __init__(self, comp: Computation, ins: Instruction, message: str) -> None:
        super().__init__(message)
        self.comp, self.ins, self.message = comp, ins, message


def _cycle(comp: Computation, ins: Instruction) -> _Bad:
    return _Bad(
        comp, ins, f"instruction {ins.name} in computation {comp.name} is its own operand (operand cycle)"
    )


def _merkle(
    order: list[str],
    operands: dict[str, tuple[str, ...]],
    keys: dict[str, int],
    by_name: dict[str, Instruction],
    rank: dict[str, int],
) -> dict[str, int]:
    """Rule 3: bottom-up hash; `rank` (canonical parameter numbers) is empty for h0.

    Operands stay in their order, commutative ops included: torch_xla's graph hash keeps it, so
    `a * b` and `b * a` are two compiles and never `identical` (the matcher may pair them).
    """
    h: dict[str, int] = {}
    for name in order:
        ops = operands[name]
        if not ops:
            h[name] = hash((keys[name], rank[name])) if name in rank else keys[name]
            continue
        h[name] = hash((keys[name], *(h[o] for o in ops)))
    return h


def _walk(outputs: list[str], operands: dict[str, tuple[str, ...]]) -> list[str]:
    """Post-order of a depth-first walk from the outputs in canonical order."""
    seen: set[str] = set()
    order: list[str] = []
    for out in outputs:
        if out in seen:
            continue
        stack = [(out, False)]
        while stack:
            name, expanded = stack.pop()
            if expanded:
                order.append(name)
                continue
            if name in seen:
                continue
            seen.add(name)
            stack.append((name, True))
            ops = operands[name]
            for o in reversed(ops):
                if o not in seen:
                    stack.append((o, False))
    return order


def canonicalize(module: Module) -> CanonicalModule:
    """Canonical form of every computation, callees first, and the module fingerprint. Of the
    module's program where the reader inlined its calls (`Module.inlined`, rust/src/canon/inline.rs,
    a step before these rules), as the engine."""
    with paused_gc():
        return _canonicalize(module.inlined or module)


def _canonicalize(module: Module) -> CanonicalModule:
    callee_hash: dict[str, int] = {}
    result: dict[str, CanonicalComputation] = {}
    for comp in _callees_first(module):
        try:
            canon = _canonicalize_computation(comp, callee_hash, comp is module.entry)
        except _Bad as e:
            raise ParseError(module.path or module.name, e.message, e.ins.line) from None
        callee_hash[comp.name] = canon.hash
        result[comp.name] = canon
    entry = result[module.entry.name]
    digest = hashlib.blake2b(repr(entry.hash).encode(), digest_size=8).hexdigest()
    params = sorted(entry.param_number, key=entry.param_number.__getitem__)
    layout = (tuple(entry.h1[o] for o in entry.outputs), tuple(entry.param_rank[p] for p in params))
    order = hashlib.blake2b(repr(layout).encode(), digest_size=8).hexdigest()
    return CanonicalModule(module, result, digest, order)


def _callees_first(module: Module) -> list[Computation]:
    """Computations ordered so that every callee precedes its callers (dumps already are)."""
    by_name = module.by_name
    order: list[Computation] = []
    state: dict[str, int] = {}
    for root in module.computations:
        stack = [(root.name, False)]
        while stack:
            name, expanded = stack.pop()
            if expanded:
                state[name] = 2
                order.append(by_name[name])
                continue
            if state.get(name):
                continue
            state[name] = 1
            stack.append((name, True))
            for ins in by_name[name].instructions:
                for callee in ins.called:
                    if not state.get(callee) and callee in by_name:
                        stack.append((callee, False))
    return order
