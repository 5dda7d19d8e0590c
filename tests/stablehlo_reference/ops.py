"""StableHLO operations -> HLO instructions: the op table (which HLO opcode each `stablehlo.*`
name is) and each operation's attributes as HLO prints them (xla/hlo/translate/mhlo_to_hlo and
hlo_instruction.cc's printer: `dimensions={1}`, `slice={[1:3]}`, `direction=LT`, ...).

`chlo` is ops_chlo.py's, Shardy's `sdy` ops_shardy.py's. An operation not in the tables, and every
other dialect's (`shape`, `tensor`, `arith`), is refused by name: a guess would compare wrongly.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.stablehlo_reference.attributes import Parsed, braces, enum, ints, one, parse
from tests.stablehlo_reference.emit import Comp, Emitter, TranslateError, Value, attr_dict, carry, unquote
from tests.stablehlo_reference.mlir_types import TypeError_, dims_of, element_of, hlo_literal, hlo_shape
from tests.stablehlo_reference.ops_chlo import CHLO_HANDLERS
from tests.stablehlo_reference.ops_custom_call import composite, custom_call
from tests.stablehlo_reference.ops_numeric import NUMERIC_HANDLERS
from tests.stablehlo_reference.ops_parallel import PARALLEL_HANDLERS
from tests.stablehlo_reference.ops_regions import REGION_HANDLERS
from tests.stablehlo_reference.ops_shardy import SDY_HANDLERS, op_shardings
from tests.stablehlo_reference.structure import Op, split_top
from tests.stablehlo_reference.structure import matching as _matching

__all__ = ["translate"]

# Operations whose HLO instruction is the same operands under another name and no attributes.
SIMPLE = {
    "abs": "abs", "add": "add", "and": "and", "atan2": "atan2", "cbrt": "cbrt", "ceil": "ceil",
    "clamp": "clamp", "complex": "complex", "cosine": "cosine", "count_leading_zeros": "count-leading-zeros",
    "divide": "divide", "exponential": "exponential", "exponential_minus_one": "exponential-minus-one",
    "floor": "floor", "imag": "imag", "is_finite": "is-finite", "log": "log", "log_plus_one": "log-plus-one",
    "logistic": "logistic", "maximum": "maximum", "minimum": "minimum", "multiply": "multiply",
    "negate": "negate", "not": "not", "or": "or", "popcnt": "popcnt", "power": "power", "real": "real",
    "remainder": "remainder", "round_nearest_afz": "round-nearest-afz",
    "round_nearest_even": "round-nearest-even", "rsqrt": "rsqrt", "select": "select",
    "shift_left": "shift-left",
    "shift_right_arithmetic": "shift-right-arithmetic", "shift_right_logical": "shift-right-logical",
    "sign": "sign", "sine": "sine", "sqrt": "sqrt", "subtract": "subtract", "tan": "tan", "tanh": "tanh",
    "xor": "xor", "convert": "convert", "reshape": "reshape", "bitcast_convert": "bitcast-convert",
    "dynamic_update_slice": "dynamic-update-slice", "after_all": "after-all", "replica_id": "replica-id",
    "partition_id": "partition-id", "create_token": "after-all",
}  # fmt: skip
_DEFAULT_COMPARE = {"s": "SIGNED", "u": "UNSIGNED", "p": "UNSIGNED"}


def translate(em: Emitter, comp: Comp, op: Op) -> None:
    dialect, _, short = op.name.partition(".")
    if op.name in ("func.call", "call"):
        handler: Callable[[Emitter, Comp, Op, Parsed], Value] = _call
    elif dialect in ("stablehlo", "mhlo") and short in SIMPLE:
        handler = _simple
    elif dialect == "chlo" and short in CHLO_HANDLERS:
        handler = CHLO_HANDLERS[short]
    elif dialect in ("stablehlo", "mhlo") and short in HANDLERS:
        handler = HANDLERS[short]
    elif dialect == "sdy" and short in SDY_HANDLERS:
        handler = SDY_HANDLERS[short]
    else:
        what = (
            "this chlo operation is not read (lower it: stablehlo-legalize-chlo)"
            if dialect == "chlo"
            else ("is not read by xlagraph's StableHLO reader")
        )
        raise TranslateError(
            f"operation {op.name} {what}" if dialect != "chlo" else f"{op.name}: {what}", op.line
        )
    try:
        parsed = parse(op)
        value = handler(em, comp, op, parsed)
    except TypeError_ as e:
        raise TranslateError(f"{op.name}: {e}", op.line) from None
    except (ValueError, IndexError, KeyError) as e:
        raise TranslateError(
            f"{op.name}: malformed or unread form ({e.__class__.__name__}: {e})", op.line
        ) from None
    if "mhlo.sharding" in parsed.attrs:
        comp.insts[-1].attrs.insert(0, "sharding=" + unquote(parsed.attrs["mhlo.sharding"]))
    sharding, sdy = op_shardings(em, parsed.attrs, sum(n for _, n in op.results), op.line)
    if sharding:
        comp.insts[-1].attrs.insert(0, sharding)
    if "xla_shape" in parsed.attrs and value.elements is None:  # torch_xla's shape with its layout
        comp.insts[-1].shape = value.shape = unquote(parsed.attrs["xla_shape"])
        parsed.attrs.get("result_layout")  # what xla_shape's layout says
    frontend = parsed.attrs.get("mhlo.frontend_attributes")
    carried = carry(parsed.attrs.unread(), (attr_dict(frontend) if frontend.startswith("{") else {}) | sdy)
    if carried:
        comp.insts[-1].attrs.append(carried)
    em.bind(comp, op, value)


def _simple(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    return one(em, comp, op, p, SIMPLE[op.name.partition(".")[2]], [])


def _call(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    m = re.match(r"\s*@([\w.$-]+|\"[^\"]*\")", op.text)
    if m is None and "callee" in p.attrs:  # the generic form: `"func.call"(%x) <{callee = @f}>`
        m = re.match(r"\s*@([\w.$-]+|\"[^\"]*\")", p.attrs["callee"])
    if m is None:
        raise TranslateError("call without a callee", op.line)
    callee = em.func(m.group(1).strip('"'), op.line)
    if len(p.outs) == 1:
        return em.inst(
            comp,
            "call",
            p.outs[0],
            [em.lookup(comp, r, op.line) for r in p.operands],
            [f"to_apply={callee}"],
            op.line,
            op.loc,
        )
    return one(em, comp, op, p, "call", [f"to_apply={callee}"])


def _constant(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    # the custom form's `dense<...> : type`, or the generic form's `<{value = dense<...> : type}>`
    text = p.attrs["value"].strip() if "value" in p.attrs else p.body.strip()
    if text.startswith("dense_resource"):
        raise TypeError_("dense_resource constants (data kept outside the text) are not read")
    if not text.startswith("dense<"):
        raise TypeError_(f"constant {text[:40]} is not read")
    shape = p.outs[0]
    literal = hlo_literal(text[6 : _matching(text, 5)], shape)
    inst = em.inst(comp, "constant", shape, [], [], op.line, op.loc)
    em_inst = comp.insts[-1]
    em_inst.opcode = f"constant({literal})"
    em_inst.operands = []
    return inst


def _broadcast(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    dims = ints(p.attrs.get("dims", p.attrs.get("broadcast_dimensions", "[]")))
    operand = em.lookup(comp, p.operands[0], op.line)
    out = dims_of(p.outs[0])
    src = dims_of(operand.shape)
    # HLO's broadcast maps each operand dimension to one of equal size; size-1 dimensions
    # StableHLO expands are first reshaped away, as XLA's export does.
    keep = [k for k, d in enumerate(src) if not (d == 1 and out[dims[k]] != 1)]
    if len(keep) != len(src):
        shape = f"{element_of(operand.shape)}[{','.join(str(src[k]) for k in keep)}]"
        operand = em.inst(comp, "reshape", shape, [operand], [], op.line, op.loc)
        dims = [dims[k] for k in keep]
    return em.inst(comp, "broadcast", p.outs[0], [operand], [f"dimensions={braces(dims)}"], op.line, op.loc)


def _dims_op(opcode: str, *keys: str) -> Callable[[Emitter, Comp, Op, Parsed], Value]:
    def handler(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
        value = next((p.attrs[k] for k in keys if k in p.attrs), None)
        if value is None:
            raise TranslateError(f"{op.name} without {keys[0]}", op.line)
        return one(em, comp, op, p, opcode, [f"dimensions={braces(ints(value))}"])

    return handler


def _iota(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    dim = ints(p.attrs.get("dim", p.attrs.get("iota_dimension", "")))[0]
    return one(em, comp, op, p, "iota", [f"iota_dimension={dim}"])


def _slice(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    if "start_indices" in p.attrs:
        starts, limits = ints(p.attrs["start_indices"]), ints(p.attrs["limit_indices"])
        strides = ints(p.attrs.get("strides", "")) or [1] * len(starts)
    else:
        m = re.search(r"\[([^\]]*)\]\s*$", p.body)
        if m is None:
            raise TranslateError("slice without its ranges", op.line)
        starts, limits, strides = [], [], []
        for r in split_top(m.group(1)):
            nums = [int(x) for x in r.split(":")]
            starts.append(nums[0])
            limits.append(nums[1])
            strides.append(nums[2] if len(nums) > 2 else 1)
    strided = any(x != 1 for x in strides)  # XLA prints every stride, or none
    ranges = ", ".join(
        f"[{a}:{b}" + (f":{x}]" if strided else "]") for a, b, x in zip(starts, limits, strides, strict=True)
    )
    return one(em, comp, op, p, "slice", ["slice={" + ranges + "}"])


def _dynamic_slice(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    sizes = ints(p.attrs.get("sizes", p.attrs.get("slice_sizes", "")))
    return one(em, comp, op, p, "dynamic-slice", [f"dynamic_slice_sizes={braces(sizes)}"])


def _pad(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    low = ints(p.attrs.get("low", p.attrs.get("edge_padding_low", "")))
    high = ints(p.attrs.get("high", p.attrs.get("edge_padding_high", "")))
    interior = ints(p.attrs.get("interior", p.attrs.get("interior_padding", ""))) or [0] * len(low)
    inner = any(interior)  # XLA prints every interior padding, or none
    pads = "x".join(
        f"{a}_{b}" + (f"_{c}" if inner else "") for a, b, c in zip(low, high, interior, strict=True)
    )
    return one(em, comp, op, p, "pad", [f"padding={pads}"])


def _compare(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    words = [w.strip() for w in split_top(p.body)]
    direction = enum(p.attrs.get("comparison_direction", words[0] if words else ""))
    kind = enum(p.attrs.get("compare_type", words[-1] if len(words) > 3 else ""))
    attrs = [f"direction={direction}"]
    element = element_of(hlo_shape(p.ins[0]))
    default = _DEFAULT_COMPARE.get(element[0], "FLOAT")
    if kind and kind not in ("NOTYPE", default):
        attrs.append(f"type={kind}")
    return one(em, comp, op, p, "compare", attrs)


def _dot_general(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    a = p.attrs
    if "dot_dimension_numbers" in a:
        inner = attr_dict("{" + a["dot_dimension_numbers"].split("<", 1)[1].rsplit(">", 1)[0] + "}")
        lb, rb = (
            ints(inner.get("lhs_batching_dimensions", "")),
            ints(inner.get("rhs_batching_dimensions", "")),
        )
        lc, rc = (
            ints(inner.get("lhs_contracting_dimensions", "")),
            ints(inner.get("rhs_contracting_dimensions", "")),
        )
    else:
        lb, rb = _pair(a.get("batching_dims", "[] x []"))
        lc, rc = _pair(a.get("contracting_dims", "[] x []"))
    attrs = []
    if lb or rb:
        attrs += [f"lhs_batch_dims={braces(lb)}"]
    attrs.append(f"lhs_contracting_dims={braces(lc)}")
    if lb or rb:
        attrs += [f"rhs_batch_dims={braces(rb)}"]
    attrs.append(f"rhs_contracting_dims={braces(rc)}")
    attrs += _precision(a)
    return one(em, comp, op, p, "dot", attrs)


def _pair(value: str) -> tuple[list[int], list[int]]:
    left, _, right = value.partition(" x ")
    return ints(left), ints(right)


def _precision(a: dict[str, str]) -> list[str]:
    value = a.get("precision", a.get("precision_config", ""))
    words = [enum(w).lower() for w in split_top(value.strip()[1:-1])] if value.startswith("[") else []
    return [f"operand_precision={{{','.join(words)}}}"] if any(w != "default" for w in words) else []


def _dot(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    rank = len(dims_of(hlo_shape(p.ins[0])))
    attrs = [f"lhs_contracting_dims={{{rank - 1}}}", "rhs_contracting_dims={0}", *_precision(p.attrs)]
    return one(em, comp, op, p, "dot", attrs)


def _get_tuple_element(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    k = ints(p.attrs.get("index", re.findall(r"\[(\d+)\]", p.body)[0] if "[" in p.body else ""))[0]
    return one(em, comp, op, p, "get-tuple-element", [f"index={k}"])


def _tuple(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    return em.inst(
        comp, "tuple", p.outs[0], [em.lookup(comp, r, op.line) for r in p.operands], [], op.line, op.loc
    )


def _optimization_barrier(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    operands = [em.lookup(comp, r, op.line) for r in p.operands]
    whole = em.inst(
        comp, "tuple", "(" + ", ".join(v.shape for v in operands) + ")", operands, [], op.line, op.loc
    )
    value = em.inst(comp, "opt-barrier", whole.shape, [whole], [], op.line, op.loc)
    value.elements = [v.shape for v in operands]
    return value


def _reduce_precision(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    e = ints(p.attrs.get("exponent_bits", p.attrs.get("format", "")).replace("e", " ").replace("m", " "))
    if "format" in p.attrs:
        e, m = e[0], e[1]
    else:
        e, m = ints(p.attrs["exponent_bits"])[0], ints(p.attrs["mantissa_bits"])[0]  # type: ignore[assignment]
    return one(em, comp, op, p, "reduce-precision", [f"exponent_bits={e}", f"mantissa_bits={m}"])


HANDLERS: dict[str, Callable[[Emitter, Comp, Op, Parsed], Value]] = {
    "constant": _constant,
    "broadcast_in_dim": _broadcast,
    "transpose": _dims_op("transpose", "dims", "permutation"),
    "reverse": _dims_op("reverse", "dims", "dimensions"),
    "concatenate": _dims_op("concatenate", "dim", "dimension"),
    "iota": _iota,
    "slice": _slice,
    "dynamic_slice": _dynamic_slice,
    "pad": _pad,
    "compare": _compare,
    "dot_general": _dot_general,
    "dot": _dot,
    "get_tuple_element": _get_tuple_element,
    "tuple": _tuple,
    "optimization_barrier": _optimization_barrier,
    "reduce_precision": _reduce_precision,
    "custom_call": custom_call,
    "composite": composite,
    **REGION_HANDLERS,
    **PARALLEL_HANDLERS,
    **NUMERIC_HANDLERS,
}
