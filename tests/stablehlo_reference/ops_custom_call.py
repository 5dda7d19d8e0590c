"""`stablehlo.custom_call` as XLA's export writes it: the target, `api_version` (a dictionary
`mhlo.backend_config` is the typed FFI's), `backend_config`, side effect, operand layouts
(`operand_layout_constraints`), result layouts (in the result's shape) and
`output_to_operand_aliasing`."""

from __future__ import annotations

import re

from tests.stablehlo_reference.attributes import Parsed, braces, ints, numbers, one
from tests.stablehlo_reference.emit import Comp, Emitter, TranslateError, Value, attr_dict, quote, unquote
from tests.stablehlo_reference.mlir_types import dims_of, hlo_shape
from tests.stablehlo_reference.structure import Op, split_top

__all__ = ["composite", "custom_call"]

_API = {"1": "", "2": "API_VERSION_STATUS_RETURNING", "3": "API_VERSION_STATUS_RETURNING_UNIFIED",
        "4": "API_VERSION_TYPED_FFI"}  # fmt: skip
_TARGET = re.compile(r'\s*@([\w.$-]+|"[^"]*")')


def _with_layout(shape: str, layout: str) -> str:
    """`f32[4,4]` and `dense<[0, 1]> : tensor<2xindex>` -> `f32[4,4]{0,1}` (none for a scalar)."""
    minor_to_major = ints(layout.split(" : ")[0].replace("dense<", ""))
    if len(minor_to_major) != len(dims_of(shape)):
        raise TranslateError(f"layout {layout[:40]} is not of {shape}", 0)
    return shape + braces(minor_to_major) if minor_to_major else shape


def custom_call(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    m = _TARGET.match(op.text)
    target = m.group(1).strip('"') if m else unquote(p.attrs.get("call_target_name", ""))
    if not target:
        raise TranslateError("custom_call without a target", op.line)
    attrs = [f'custom_call_target="{target}"']
    if p.attrs.get("has_side_effect") == "true":
        attrs.append("custom_call_has_side_effect=true")
    config = p.attrs.get("backend_config", "")
    typed = p.attrs.get("mhlo.backend_config", "")
    if typed.startswith("{"):  # the typed FFI's attributes
        attrs.append(f"backend_config={typed}")
    elif (config.startswith('"') and unquote(config)) or config.startswith("{"):
        attrs.append(f"backend_config={config}")
    version = p.attrs.get("api_version", "4" if typed else "1").split(":")[0].strip()
    if _API.get(version):
        attrs.append(f"api_version={_API[version]}")
    if p.attrs.get("called_computations", "[]") not in ("[]", ""):
        raise TranslateError("custom_call with called computations is not read", op.line)
    layouts = split_top(p.attrs.get("operand_layouts", "[]").strip()[1:-1])
    if layouts:
        shapes = [_with_layout(hlo_shape(t), lay) for t, lay in zip(p.ins, layouts, strict=True)]
        attrs.append("operand_layout_constraints={" + ", ".join(shapes) + "}")
    aliases = split_top(p.attrs.get("output_operand_aliases", "[]").strip()[1:-1])
    if aliases:
        pairs = []
        for alias in aliases:
            n = numbers(alias)
            out, operand = ints(n.get("output_tuple_indices", "[]")), ints(n.get("operand_index", "0"))[0]
            pairs.append(f"{braces(out)}: ({operand}, {braces(ints(n.get('operand_tuple_indices', '[]')))})")
        attrs.append("output_to_operand_aliasing={" + ", ".join(pairs) + "}")
    results = split_top(p.attrs.get("result_layouts", "[]").strip()[1:-1])
    if results:
        p.outs = [_with_layout(s, lay) for s, lay in zip(p.outs, results, strict=True)]
    return one(em, comp, op, p, "custom-call", attrs)


_NAME = re.compile(r'\s*"([^"]*)"')


def composite(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    """`stablehlo.composite "name" %x {composite_attributes = {...}, decomposition = @f, version =
    2 : i32}` as XLA's export writes it: a call of the decomposition marked `is_composite=true`, the
    name, version and attributes as frontend attributes (`composite.name="..."`)."""
    m = _NAME.match(op.text)
    name = m.group(1) if m else unquote(p.attrs.get("name", ""))
    target = _TARGET.match(p.attrs.get("decomposition", ""))
    if target is None or not name:
        raise TranslateError(f"{op.name}: expected a name and a decomposition", op.line)
    callee = em.func(target.group(1).strip('"'), op.line)
    version = (ints(p.attrs.get("version", "0")) or [0])[0]
    front = p.attrs.get("mhlo.frontend_attributes", "")
    items = list(attr_dict(front).items()) if front.startswith("{") else []
    items += [
        ("composite.attributes", quote(p.attrs.get("composite_attributes", "{}"))),
        ("composite.name", quote(name)),
        ("composite.version", quote(str(version))),
    ]
    p.attrs["mhlo.frontend_attributes"] = "{" + ", ".join(f"{k} = {v}" for k, v in items) + "}"
    return one(em, comp, op, p, "call", [f"to_apply={callee}", "is_composite=true"])
