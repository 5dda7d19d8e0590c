"""Collectives (`all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`, `collective_permute`)
and the operations whose attributes are structured dimension numbers (`gather`, `convolution`),
plus `rng_bit_generator`, as HLO prints them."""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.stablehlo_reference.attributes import Parsed, braces, enum, ints, nested, numbers, one
from tests.stablehlo_reference.emit import Comp, Emitter, TranslateError, Value
from tests.stablehlo_reference.mlir_types import dims_of, hlo_shape
from tests.stablehlo_reference.ops_regions import reducer, window
from tests.stablehlo_reference.structure import Op, split_top

__all__ = ["PARALLEL_HANDLERS"]

_HANDLE = re.compile(r"handle\s*=\s*(\d+)")
_RNG = {"DEFAULT": "rng_default", "THREE_FRY": "rng_three_fry", "PHILOX": "rng_philox"}


def _groups(a: dict[str, str]) -> list[str]:
    """`channel_id=`, `replica_groups=` and `use_global_device_ids=` of a collective."""
    out = []
    m = _HANDLE.search(a.get("channel_handle", ""))
    if m and int(m.group(1)) > 0:
        out.append(f"channel_id={m.group(1)}")
    groups = a.get("replica_groups", "")
    if groups:
        empty = "0x0" in groups or groups.startswith("dense<>")
        rows = [] if empty else nested(groups)
        out.append("replica_groups={" + ",".join(braces(r) for r in rows) + "}")
    if a.get("use_global_device_ids") == "true":
        out.append("use_global_device_ids=true")
    return out


def _all_reduce(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    return one(
        em, comp, op, p, "all-reduce", [*_groups(p.attrs), f"to_apply={reducer(em, op, op.regions[0])}"]
    )


def _reduce_scatter(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    dim = ints(p.attrs["scatter_dimension"])[0]
    attrs = [*_groups(p.attrs), f"dimensions={{{dim}}}", f"to_apply={reducer(em, op, op.regions[0])}"]
    return one(em, comp, op, p, "reduce-scatter", attrs)


def _all_gather(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    dim = ints(p.attrs["all_gather_dim"])[0]
    return one(em, comp, op, p, "all-gather", [*_groups(p.attrs), f"dimensions={{{dim}}}"])


def _all_to_all(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    split, concat = ints(p.attrs["split_dimension"])[0], ints(p.attrs["concat_dimension"])[0]
    if split != concat:
        raise TranslateError("all_to_all with split_dimension != concat_dimension is not read", op.line)
    return one(em, comp, op, p, "all-to-all", [*_groups(p.attrs), f"dimensions={{{split}}}"])


def _collective_permute(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    pairs = nested(p.attrs["source_target_pairs"])
    attrs = [*_groups(p.attrs), "source_target_pairs={" + ",".join(braces(r) for r in pairs) + "}"]
    return one(em, comp, op, p, "collective-permute", attrs)


def _gather(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    n = numbers(p.attrs.get("dimension_numbers", ""))
    attrs = [f"{k}={braces(ints(n.get(k, '[]')))}" for k in ("offset_dims", "collapsed_slice_dims")]
    for k in ("operand_batching_dims", "start_indices_batching_dims"):
        if ints(n.get(k, "[]")):
            attrs.append(f"{k}={braces(ints(n[k]))}")
    attrs.append(f"start_index_map={braces(ints(n.get('start_index_map', '[]')))}")
    attrs.append(f"index_vector_dim={ints(n.get('index_vector_dim', '0'))[0]}")
    attrs.append(f"slice_sizes={braces(ints(p.attrs.get('slice_sizes', '')))}")
    if p.attrs.get("indices_are_sorted") == "true":
        attrs.append("indices_are_sorted=true")
    return one(em, comp, op, p, "gather", attrs)


def _labels(text: str) -> list[str]:
    """`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` -> ["b01f", "01io", "b01f"]."""
    groups = re.findall(r"\[([^\]]*)\]", text)
    if len(groups) != 3:
        raise TranslateError(f"convolution dimension numbers {text[:60]} are not read", 0)
    return ["".join(x.strip() for x in split_top(g)) for g in groups]


def _convolution(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    a = p.attrs
    numbers = a.get("dim_numbers", a.get("dimension_numbers", ""))
    lhs, rhs, out = _labels(numbers.split("<", 1)[1] if "#stablehlo.conv" in numbers else numbers)
    kernel = dims_of(hlo_shape(p.ins[1]))
    spatial = sorted(c for c in rhs if c.isdigit())
    size = [kernel[rhs.index(c)] for c in spatial]
    w = {"window_dimensions": str(size)}
    w["window_strides"] = a.get("stride", a.get("window_strides", ""))
    w["padding"] = a.get("pad", a.get("padding", ""))
    w["base_dilations"] = a.get("lhs_dilate", a.get("lhs_dilation", ""))
    w["window_dilations"] = a.get("rhs_dilate", a.get("rhs_dilation", ""))
    if "true" in a.get("reverse", a.get("window_reversal", "")):
        raise TranslateError("convolution with window reversal is not read", op.line)
    attrs = [window(w, len(size)), f"dim_labels={lhs}_{rhs}->{out}"]
    for key, name in (
        ("feature_group_count", "feature_group_count"),
        ("batch_group_count", "batch_group_count"),
    ):
        k = ints(a.get(key, "1"))[0]
        if k != 1:
            attrs.append(f"{name}={k}")
    words = [enum(x).lower() for x in split_top(a.get("precision_config", "[]").strip()[1:-1])]
    if any(x != "default" for x in words):
        attrs.append("operand_precision={" + ",".join(words) + "}")
    return one(em, comp, op, p, "convolution", attrs)


def _rng_bit_generator(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    algorithm = enum(p.attrs.get("algorithm", p.attrs.get("rng_algorithm", "DEFAULT")))
    return one(em, comp, op, p, "rng-bit-generator", [f"algorithm={_RNG.get(algorithm, algorithm.lower())}"])


def _collective_broadcast(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    return one(em, comp, op, p, "collective-broadcast", _groups(p.attrs))


PARALLEL_HANDLERS: dict[str, Callable[[Emitter, Comp, Op, Parsed], Value]] = {
    "all_reduce": _all_reduce,
    "reduce_scatter": _reduce_scatter,
    "all_gather": _all_gather,
    "all_to_all": _all_to_all,
    "collective_permute": _collective_permute,
    "gather": _gather,
    "convolution": _convolution,
    "rng_bit_generator": _rng_bit_generator,
    "collective_broadcast": _collective_broadcast,
}
