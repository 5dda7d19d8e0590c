"""Shardy on operations, as XLA's export writes it: `sdy.sharding_constraint` -> the custom call
`Sharding` (the HLO sharding constraint), and an operation's `sdy.sharding` (one sharding per
result) -> its `sharding=` (a tuple's for several results); both keep the Shardy text in the
frontend attribute `xla.sdy.sharding`, and `sdy.sharding_rule` goes to `xla.sdy.sharding_rule`
(xla/service/spmd/shardy/sdy_round_trip/export_shardy_attrs.cc); `sdy.manual_computation`
(`shard_map`) is ops_manual.py's. The other `sdy` operations (`reshard`, `named_computation`, ...)
are refused by name."""

from __future__ import annotations

from tests.stablehlo_reference.attributes import Attrs, Parsed, one
from tests.stablehlo_reference.emit import SDY_FRONTEND, Comp, Emitter, TranslateError, Value
from tests.stablehlo_reference.ops_manual import manual_computation
from tests.stablehlo_reference.shardy import tuple_sharding
from tests.stablehlo_reference.structure import Op, matching

__all__ = ["SDY_HANDLERS", "op_shardings"]

_RULE_FRONTEND = "xla.sdy.sharding_rule"


def _constraint(em: Emitter, comp: Comp, op: Op, p: Parsed) -> Value:
    """`sdy.sharding_constraint %x <@mesh, [...]>` (or its generic `<{sharding = ...}>`): the
    custom call `Sharding`, with a side effect where the sharding has unreduced axes (as XLA's
    export writes it); its sharding is the operation's own (`op_shardings`)."""
    text = p.attrs.get("sharding", "")
    if not text:
        start = p.body.find("<@")
        end = matching(p.body, start) if start >= 0 else -1
        if end < 0:
            raise TranslateError("sdy.sharding_constraint without its sharding", op.line)
        text = p.body[start : end + 1]
        for key in ("replicated", "unreduced"):  # the pretty sharding's, not the operation's
            p.attrs.get(key)
    per_value = "#sdy.sharding_per_value<[" + text.strip().removeprefix("#sdy.sharding") + "]>"
    _, kept = em.meshes.per_value(per_value, op.line)
    p.attrs["sdy.sharding"] = per_value
    side_effect = ["custom_call_has_side_effect=true"] if "unreduced=" in kept else []
    attrs = ['custom_call_target="Sharding"', *side_effect]
    return one(em, comp, op, p, "custom-call", attrs)


def op_shardings(em: Emitter, attrs: Attrs, results: int, line: int) -> tuple[str, dict[str, str]]:
    """An operation's `sdy.sharding` as `sharding=...` ("" when it has none) and the frontend
    attributes XLA's export adds for it and for its `sdy.sharding_rule`."""
    frontend = {}
    if "sdy.sharding_rule" in attrs:
        frontend[_RULE_FRONTEND] = attrs["sdy.sharding_rule"]
    if "sdy.sharding" not in attrs:
        return "", frontend
    if "mhlo.sharding" in attrs:
        raise TranslateError("both mhlo.sharding and sdy.sharding on one operation: which is it?", line)
    shardings, text = em.meshes.per_value(attrs["sdy.sharding"], line)
    if len(shardings) != max(results, 1) and not (results == 0 and len(shardings) == 1):
        raise TranslateError(f"sdy.sharding has {len(shardings)} shardings for {results} results", line)
    frontend[SDY_FRONTEND] = text
    return "sharding=" + (shardings[0] if results <= 1 else tuple_sharding(shardings)), frontend


SDY_HANDLERS = {"sharding_constraint": _constraint, "manual_computation": manual_computation}
