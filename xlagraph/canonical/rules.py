"""The canonicalization rules as pure functions over one computation, and `canonicalize`."""

from __future__ import annotations

import hashlib
import re

from xlagraph._gc import paused_gc
from xlagraph.canonical.hashes import (
    EffectKeyError,
    IotaError,
    content_key,
    declared_shapes,
    effect_hashes,
    layout_of,
    plumbing_attributes,
    stable_hash,
)
from xlagraph.canonical.model import CanonicalComputation, CanonicalModule, assembled
from xlagraph.canonical.tuple_params import Forwarding, unwrap
from xlagraph.errors import ParseError
from xlagraph.ir import COMPUTATION_ATTRIBUTES, Computation, Instruction, Module, strip_layout

__all__ = ["canonicalize", "forward_tuples", "live_order", "output_names"]

_DIMS = re.compile(r"\[[^\]]*\]")


def forward_tuples(comp: Computation, unwrap_parameters: bool) -> Forwarding:
    """Rule 1: where each get-tuple-element really reads from, and the inputs.

    `alias` maps a gte of a tuple to the element it forwards to; `inputs` maps each input to its
    number: the parameters, or in the entry (`unwrap_parameters`) also the elements of tuple
    parameters read through get-tuple-element (`tuple_params`).
    """
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
    inputs = {ins.name: ins.parameter_number for ins in comp.instructions if ins.opcode == "parameter"}
    return Forwarding(alias, inputs, ())


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
    order, _, operands = _live(comp, outputs, alias, inputs)
    return order, operands


def _live(
    comp: Computation, outputs: tuple[str, ...], alias: dict[str, str], inputs: dict[str, int]
) -> tuple[list[str], list[Instruction], dict[str, tuple[str, ...]]]:
    """`live_order`, plus the instructions in that order: later passes read them from this list
    instead of looking each name up again in a dictionary too large for the CPU caches.

    A depth-first post-order from the outputs in order. Each frame on the stack keeps the next
    operand to visit, so an instruction is pushed once, not once per user."""
    by_name = comp.by_name
    live: list[Instruction] = []
    operands: dict[str, tuple[str, ...]] = {}  # also the set of instructions entered
    order: list[str] = []
    done: set[str] = set()
    alias_keys = alias.keys()

    def enter(name: str) -> list:  # [name, forwarded operands, next operand index, instruction]
        ins = by_name[name]
        if name in inputs and ins.operands:  # an element of a tuple parameter reads nothing
            ops: tuple[str, ...] = ()
        else:
            ops = ins.operands
            if alias and not alias_keys.isdisjoint(ops):
                ops = tuple(alias.get(o, o) for o in ops)
        operands[name] = ops
        return [name, ops, 0, ins]

    for out in outputs:
        if out in done:
            continue
        stack = [enter(out)]
        while stack:
            frame = stack[-1]
            ops, i = frame[1], frame[2]
            n = len(ops)
            while i < n and ops[i] in done:
                i += 1
            if i < n:
                frame[2] = i + 1
                o = ops[i]
                if o in operands:  # entered, not done: it is its own operand
                    raise _cycle(comp, by_name[o])
                stack.append(enter(o))
            else:
                stack.pop()
                done.add(frame[0])
                order.append(frame[0])
                live.append(frame[3])
    # Inputs that nothing reads are inputs all the same, not dead code (a tuple parameter whose
    # elements are the inputs is not one).
    for ins in comp.instructions:
        if ins.name in inputs and ins.name not in done:
            done.add(ins.name)
            order.append(ins.name)
            live.append(ins)
            operands[ins.name] = ()
    return order, live, operands


def _dead_and_plumbing(
    comp: Computation,
    order: list[str],
    live: list[Instruction],
    operands: dict[str, tuple[str, ...]],
    reads: frozenset[str],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Instructions that never reach the root, and those that do but that forwarding made
    redundant. `operands` holds every live instruction. Past the live ones, only operands that
    forwarding replaced (the tuples and get-tuple-elements in between) lead anywhere new, so the
    walk starts there and never enters the live graph."""
    by_name = comp.by_name
    reached: set[str] = set()  # reached and not live
    stack = [comp.root.name]
    for name, ins in zip(order, live, strict=True):
        if operands[name] is not ins.operands:
            stack.extend(ins.operands)
    while stack:
        name = stack.pop()
        if name in operands or name in reached:
            continue
        reached.add(name)
        ins = by_name.get(name)
        if ins is not None:
            stack.extend(ins.operands)
    dead: list[str] = []
    plumbing: list[str] = []
    for ins in comp.instructions:
        name = ins.name
        if name in operands:
            continue
        if name in reached:
            plumbing.append(name)
        elif ins.opcode != "parameter" and name not in reads:
            dead.append(name)
    return tuple(dead), tuple(plumbing)


def _canonicalize_computation(
    comp: Computation, callee_hash: dict[str, int], is_entry: bool, key_cache: dict[tuple, tuple[int, str]]
) -> CanonicalComputation:
    """`key_cache` maps what `content_key` reads of an instruction that calls nothing to its key
    and layout: one module repeats the same few thousand instructions (a layer's ops, constants)."""
    alias, inputs, unwrapped, reads = forward_tuples(comp, unwrap_parameters=is_entry)
    outputs = output_names(comp, alias)
    order, live, operands = _live(comp, outputs, alias, inputs)

    try:
        keys, param_number, layouts, h0 = _keys_and_h0(order, live, operands, inputs, callee_hash, key_cache)
    except _BadKey as e:
        raise _Bad(comp, e.ins, e.message) from None
    if is_entry:
        # Only the entry's interface is canonicalized away (and reported as a permutation).
        ranked = sorted(range(len(outputs)), key=lambda k: h0[outputs[k]])
        canonical_outputs = [outputs[k] for k in ranked]
        walk, rank, h1 = _walk_and_h1(canonical_outputs, operands, keys, param_number, order)
        unread = sorted((p for p in param_number if p not in rank), key=lambda p: (keys[p], param_number[p]))
        for name in unread:
            rank[name] = len(rank)
            h1[name] = hash((keys[name], rank[name]))  # unread, so no operands
    else:
        # A called computation is compared with its own numbering and output order: its caller
        # passes operands by position and reads results by tuple index, so `compare(p0, p1)` vs
        # `compare(p1, p0)` (a sort comparator) or `tuple(a, b)` vs `tuple(b, a)` differ.
        walk = _walk(list(outputs), operands)
        rank = dict(param_number)
        h1 = _merkle(order, operands, keys, rank)

    if len(order) == len(comp.instructions):
        dead = plumbing = ()
    else:
        dead, plumbing = _dead_and_plumbing(comp, order, live, operands, reads)
    skeleton = stable_hash(_tuple_skeleton(comp.root.shape) + _forwarded_root(comp, keys))
    # Layouts stay out of h0/h1 (matching pairs instructions whatever their layout) but not out
    # of the computation's identity: a layout or memory-space change is a recompile.
    # Strings enter as their stable hashes: `hash(str)` is seeded per process (and the compiled
    # core, rust/src/canon/, computes these same numbers).
    layout_key = tuple(sorted({(h1[n], stable_hash(lay)) for n, lay in layouts.items()}))  # CSE-blind
    if is_entry:
        unused = sorted(keys[p] for p in unread)
        if unwrapped:
            unused += sorted(stable_hash(_unwrapped_shape(comp.by_name[p].shape)) for p in unwrapped)
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


def _unwrapped_shape(shape: str) -> str:
    """What a tuple parameter whose elements are the inputs adds to the entry's identity: how it
    nests and the shapes it declares, sorted (so that permuting its elements is a permutation of
    inputs), elements that nothing reads included."""
    return _tuple_skeleton(shape) + "|" + declared_shapes(shape)


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


class _BadKey(Exception):
    def __init__(self, ins: Instruction, message: str) -> None:
        super().__init__(message)
        self.ins, self.message = ins, message


def _keys_and_h0(
    order: list[str],
    live: list[Instruction],
    operands: dict[str, tuple[str, ...]],
    inputs: dict[str, int],
    callee_hash: dict[str, int],
    key_cache: dict[tuple, tuple[int, str]],
) -> tuple[dict[str, int], dict[str, int], dict[str, str], dict[str, int]]:
    """Content keys, parameter numbers, non-default layouts and `h0` (`_merkle` without ranks),
    in one pass over `order`: operands come first, so their `h0` is known."""
    keys: dict[str, int] = {}
    param_number: dict[str, int] = {}
    layouts: dict[str, str] = {}
    h0: dict[str, int] = {}
    for name, ins in zip(order, live, strict=True):
        is_param = name in inputs
        if is_param:
            param_number[name] = inputs[name]
        cache_key = None if ins.called else (ins.opcode, ins.shape, ins.attributes, ins.payload, is_param)
        cached = key_cache.get(cache_key) if cache_key is not None else None
        if cached is None:  # a key that depends on callees' hashes is never cached
            try:
                cached = (
                    stable_hash(content_key(ins, callee_hash, parameter=is_param)),
                    layout_of(ins.shape) if "{" in ins.shape else "",
                )
            except IotaError as e:
                raise _BadKey(ins, str(e)) from None
            # Stored only when no attribute names a computation: a hit has the same attributes.
            if cache_key is not None and COMPUTATION_ATTRIBUTES.isdisjoint([a for a, _ in ins.attributes]):
                key_cache[cache_key] = cached
        k, lay = cached
        keys[name] = k
        if lay:
            layouts[name] = lay
        ops = operands[name]
        n = len(ops)
        if n == 1:
            h0[name] = hash((k, h0[ops[0]]))
        elif n == 2:
            h0[name] = hash((k, h0[ops[0]], h0[ops[1]]))
        elif n:
            h0[name] = hash((k, *map(h0.__getitem__, ops)))
        else:
            h0[name] = k
    return keys, param_number, layouts, h0


def _merkle(
    order: list[str],
    operands: dict[str, tuple[str, ...]],
    keys: dict[str, int],
    rank: dict[str, int],
) -> dict[str, int]:
    """Rule 3: bottom-up hash; `rank` (canonical parameter numbers) is empty for h0.

    Operands stay in their order, commutative ops included: torch_xla's graph hash keeps it, so
    `a * b` and `b * a` are two compiles and never `identical` (the matcher may pair them).
    """
    h: dict[str, int] = {}
    for name in order:
        ops = operands[name]
        n = len(ops)
        # The same tuples as `(key, *operand hashes)`, built without a generator.
        if n == 1:
            h[name] = hash((keys[name], h[ops[0]]))
        elif n == 2:
            h[name] = hash((keys[name], h[ops[0]], h[ops[1]]))
        elif n:
            h[name] = hash((keys[name], *map(h.__getitem__, ops)))
        else:
            h[name] = hash((keys[name], rank[name])) if name in rank else keys[name]
    return h


def _walk_and_h1(
    outputs: list[str],
    operands: dict[str, tuple[str, ...]],
    keys: dict[str, int],
    param_number: dict[str, int],
    order: list[str],
) -> tuple[list[str], dict[str, int], dict[str, int]]:
    """The entry's `_walk`, parameters numbered in the order it reaches them (the canonical
    numbers), and `h1` over that walk (a post-order has every operand's hash first). Parameters
    the walk never reaches keep 0 here; the caller numbers them after."""
    walk = _walk(outputs, operands)
    rank: dict[str, int] = {}
    for name in walk:
        if name in param_number:
            rank[name] = len(rank)
    h1: dict[str, int] = dict.fromkeys(order, 0)  # keys in `order`, as for a called computation
    h1.update(_merkle(walk, operands, keys, rank))
    return walk, rank, h1


def _walk(outputs: list[str], operands: dict[str, tuple[str, ...]]) -> list[str]:
    """Post-order of a depth-first walk from the outputs in canonical order (a frame per
    instruction, as in `live_order`; the operands are known to be acyclic by then)."""
    seen: set[str] = set()
    order: list[str] = []
    for out in outputs:
        if out in seen:
            continue
        seen.add(out)
        stack = [[out, operands[out], 0]]
        while stack:
            frame = stack[-1]
            ops, i = frame[1], frame[2]
            n = len(ops)
            while i < n and ops[i] in seen:
                i += 1
            if i < n:
                frame[2] = i + 1
                o = ops[i]
                seen.add(o)
                stack.append([o, operands[o], 0])
            else:
                stack.pop()
                order.append(frame[0])
    return order


def canonicalize(module: Module) -> CanonicalModule:
    """Canonical form of every computation, callees first, and the module fingerprint.

    A module from the compiled reader comes with its canonical form computed there (the same
    numbers, rust/src/canon/); any other module (lazy IR, built by hand, or one the compiled
    core leaves to Python) is canonicalized here."""
    with paused_gc():
        core = module.core
        if core is not None and core[0] is module.computations and core[1] is not None:
            return _from_core(module, core[1])
        return _canonicalize(module)


def _from_core(module: Module, core: tuple) -> CanonicalModule:
    """The `CanonicalModule` of what `_core.parse_hlo` computed: `(message, line)` for a module
    canonicalization refuses, else `(fingerprint, order, forms)`."""
    if len(core) == 2:
        message, line = core
        raise ParseError(module.path or module.name, message, line)
    fingerprint, order, forms = core
    comps = module.computations
    result: dict[str, CanonicalComputation] = {}
    for index, *fields in forms:
        comp = comps[index]
        result[comp.name] = assembled((comp, *fields))
    return CanonicalModule(module, result, fingerprint, order)


def _canonicalize(module: Module) -> CanonicalModule:
    callee_hash: dict[str, int] = {}
    key_cache: dict[tuple, tuple[int, str]] = {}
    result: dict[str, CanonicalComputation] = {}
    for comp in _callees_first(module):
        try:
            canon = _canonicalize_computation(comp, callee_hash, comp is module.entry, key_cache)
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
