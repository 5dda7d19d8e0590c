"""Operations that hold regions, each region written as a computation of its own: reductions
(`reduce`, `reduce_window`, `sort`, `scatter`: the region is the `to_apply` computation) and
control flow (`while`, `case`, `if`: the region's values from outside are passed in, emit.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.stablehlo_reference.attributes import Parsed, braces, ints, numbers, one
from tests.stablehlo_reference.emit import Comp, Emitter, TranslateError, Value, free_refs
from tests.stablehlo_reference.mlir_types import dims_of, element_of, hlo_shape
from tests.stablehlo_reference.structure import Op, Region, matching, split_top, strip_loc

__all__ = ["REGION_HANDLERS", "applied", "reducer"]

_ITER_ARG = re.compile(r"(%[\w.$-]+)\s*=\s*%")
_APPLIES = re.compile(r"applies\s+([\w.]+)")
_BINARY = {"add": "add", "multiply": "multiply", "maximum": "maximum", "minimum": "minimum", "and": "and",
           "or": "or", "xor": "xor"}  # fmt: skip


def reducer(em: Emitter, op: Op, region: Region) -> str:
    """A region that must not read values from outside (a reducer, a comparator) as a
    computation with one parameter per block argument."""
    if free_refs(region):
        raise TranslateError(f"{op.name}: its region reads {free_refs(region)[0]} from outside", op.line)
    params = [[(name, hlo_shape(t))] for name, t in region.args]
    name, _ = em.region(region, params)
    return name


def applied(em: Emitter, op: Op, opname: str, shapes: list[str]) -> str:
    """`applies stablehlo.add`: the two-parameter computation XLA's export writes for it."""
    dialect, _, short = opname.partition(".")
    if dialect != "stablehlo" or short not in _BINARY:
        raise TranslateError(f"{op.name} applies {opname}, which is not read", op.line)
    comp = Comp(em.fresh("region"), op.line)
    params = []
    for k, shape in enumerate(shapes):
        params.append(em.inst(comp, "parameter", shape, [], [], op.line, base="Arg"))
        comp.insts[-1].opcode = f"parameter({k})"
    em.inst(comp, _BINARY[short], shapes[0], params, [], op.line, op.loc)
    comp.insts[-1].root = True
    em.comps.append(comp)
    return comp.name


def _reducer_args(label: str) -> list[tuple[str, str]]:
    """`reducer(%a: T, %c: T) (%b: T, %d: T)` -> [a, b, c, d]: accumulators, then elements."""
    pairs: list[list[tuple[str, str]]] = []
    k = label.find("(")
    while k >= 0:
        end = matching(label, k)
        if end < 0:
            break
        group = []
        for arg in split_top(label[k + 1 : end]):
            name, _, type_ = strip_loc(arg)[0].partition(":")
            group.append((name.strip(), type_.strip()))
        pairs.append(group)
        k = label.find("(", end)
    return [p[0] for p in pairs] + [p[1] for p in pairs]


def _inputs_and_inits(op: Op, p: Parsed) -> tuple[list[str], list[str]]:
    if "init:" in p.body:  # pretty: `(%a init: %c), (%b init: %d)`
        return p.operands[0::2], p.operands[1::2]
    half = len(p.operands) // 2
    return p.operands[:half], p.operands[half:]


def _reduce(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    inputs, inits = _inputs_and_inits(op, p)
    operands = [em.lookup(comp, r, op.line) for r in inputs + inits]
    dims = ints(p.attrs.get("dimensions", "[]"))
    scalars = [f"{element_of(v.shape)}[]" for v in operands[len(inputs) :]]
    if m := _APPLIES.search(p.body):
        body = applied(em, op, m.group(1), scalars * 2)
    else:
        region = op.regions[0]
        if region.label.startswith("reducer("):
            region.args = _reducer_args(region.label)
        body = reducer(em, op, region)
    return one(em, comp, op, p, "reduce", [f"dimensions={braces(dims)}", f"to_apply={body}"], operands)


def window(a: dict[str, str], rank: int, size_key: str = "window_dimensions") -> str:
    size = ints(a.get(size_key, "")) or [1] * rank
    parts = [f"size={'x'.join(map(str, size))}"]
    stride = ints(a.get("window_strides", "")) or [1] * rank
    if any(s != 1 for s in stride):
        parts.append(f"stride={'x'.join(map(str, stride))}")
    pad = ints(a.get("padding", "")) or [0] * (2 * rank)
    if len(pad) == 1:
        pad = pad * (2 * rank)
    if any(pad):
        parts.append("pad=" + "x".join(f"{pad[2 * k]}_{pad[2 * k + 1]}" for k in range(rank)))
    for key, name in (("base_dilations", "lhs_dilate"), ("window_dilations", "rhs_dilate")):
        d = ints(a.get(key, "")) or [1] * rank
        if any(x != 1 for x in d):
            parts.append(f"{name}={'x'.join(map(str, d))}")
    return "window={" + " ".join(parts) + "}"


def _reduce_window(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    operands = [em.lookup(comp, r, op.line) for r in p.operands]
    rank = len(dims_of(operands[0].shape))
    body = reducer(em, op, op.regions[0])
    return one(em, comp, op, p, "reduce-window", [window(p.attrs, rank), f"to_apply={body}"], operands)


def _select_and_scatter(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    """`select-and-scatter(operand, source, init), window={...}, select=..., scatter=...`."""
    operands = [em.lookup(comp, r, op.line) for r in p.operands]
    rank = len(dims_of(operands[0].shape))
    select = reducer(em, op, op.regions[0])
    scatter = reducer(em, op, op.regions[1])
    attrs = [window(p.attrs, rank), f"select={select}", f"scatter={scatter}"]
    return one(em, comp, op, p, "select-and-scatter", attrs, operands)


def _sort(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    dim = ints(p.attrs.get("dimension", "-1"))[0]
    attrs = [f"dimensions={{{dim}}}"]
    if p.attrs.get("is_stable") == "true":
        attrs.append("is_stable=true")
    return one(em, comp, op, p, "sort", [*attrs, f"to_apply={reducer(em, op, op.regions[0])}"])


def _scatter(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    n = numbers(p.attrs.get("scatter_dimension_numbers", ""))
    attrs = [f"{k}={braces(ints(n.get(k, '[]')))}" for k in ("update_window_dims", "inserted_window_dims")]
    for k in ("input_batching_dims", "scatter_indices_batching_dims"):
        if ints(n.get(k, "[]")):
            attrs.append(f"{k}={braces(ints(n[k]))}")
    attrs.append(f"scatter_dims_to_operand_dims={braces(ints(n.get('scatter_dims_to_operand_dims', '[]')))}")
    attrs.append(f"index_vector_dim={ints(n.get('index_vector_dim', '0'))[0]}")
    for k in ("indices_are_sorted", "unique_indices"):
        if p.attrs.get(k) == "true":
            attrs.append(f"{k}=true")
    attrs.append(f"to_apply={reducer(em, op, op.regions[0])}")
    return one(em, comp, op, p, "scatter", attrs)


def _while(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    if len(op.regions) != 2:
        raise TranslateError("while without its two regions", op.line)
    cond, body = op.regions
    if not cond.args:  # pretty: `(%iterArg = %init, ...) : types`
        names = _ITER_ARG.findall(p.body)
        cond.args = body.args = list(zip(names, p.ins, strict=True))
    inits = [em.lookup(comp, r, op.line) for r in p.operands]
    captured = list(dict.fromkeys(free_refs(cond) + free_refs(body)))
    outside = [em.lookup(comp, r, op.line) for r in captured]
    carried = inits + outside
    state = "(" + ", ".join(v.shape for v in carried) + ")"
    whole = em.inst(comp, "tuple", state, carried, [], op.line, op.loc)
    params = [
        [(name, v.shape) for (name, _), v in zip(cond.args, inits, strict=True)]
        + [(c, v.shape) for c, v in zip(captured, outside, strict=True)]
    ]
    condition, _ = em.region(cond, params, tuple_param=True)  # one tuple, as XLA's export writes
    body_params = [
        [(name, v.shape) for (name, _), v in zip(body.args, inits, strict=True)] + params[0][len(inits) :]
    ]
    loop, _ = em.region(body, body_params, tuple_root=True, carry=captured, tuple_param=True)
    value = em.inst(
        comp, "while", state, [whole], [f"condition={condition}", f"body={loop}"], op.line, op.loc
    )
    value.elements = [v.shape for v in inits]
    return value


def _branches(em: Emitter, comp: Comp, op: Op, p: Parsed) -> tuple[list[Value], list[str]]:
    operands, names = [], []
    for region in op.regions:
        captured = free_refs(region)
        values = [em.lookup(comp, r, op.line) for r in captured]
        if len(values) == 1:
            operands.append(values[0])
        else:
            shape = "(" + ", ".join(v.shape for v in values) + ")"
            operands.append(em.inst(comp, "tuple", shape, values, [], op.line, op.loc))
        name, _ = em.region(
            region,
            [[(c, v.shape) for c, v in zip(captured, values, strict=True)]],
            tuple_root=len(p.outs) > 1,
        )
        names.append(name)
    return operands, names


def _case(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    index = em.lookup(comp, p.operands[0], op.line)
    operands, names = _branches(em, comp, op, p)
    attrs = ["branch_computations={" + ", ".join(names) + "}"]
    return one(em, comp, op, p, "conditional", attrs, [index, *operands])


def _if(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    pred = em.lookup(comp, p.operands[0], op.line)
    operands, names = _branches(em, comp, op, p)
    attrs = [f"true_computation={names[0]}", f"false_computation={names[1]}"]
    return one(em, comp, op, p, "conditional", attrs, [pred, *operands])


REGION_HANDLERS: dict[str, Callable[[Emitter, Comp, Op, Parsed], Value]] = {
    "reduce": _reduce,
    "reduce_window": _reduce_window,
    "select_and_scatter": _select_and_scatter,
    "sort": _sort,
    "scatter": _scatter,
    "while": _while,
    "case": _case,
    "if": _if,
}
