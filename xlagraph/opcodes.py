"""Opcode families, from the one table (rust/src/families.rs, read through the compiled core):
the Rust engine and every Python stage use the same sets. Families made from those (named here)
are for rules that need a part of one."""

from __future__ import annotations

from xlagraph._core import opcode_families

__all__ = [
    "COLLECTIVES",
    "COLLECTIVE_KINDS",
    "COMMUTATIVE",
    "RANDOM",
    "REPLICA_GROUP_COLLECTIVES",
    "RESTATES",
    "SIDE_EFFECTS",
]

_FAMILIES = opcode_families()

COMMUTATIVE: frozenset[str] = _FAMILIES["commutative"]
SIDE_EFFECTS: frozenset[str] = _FAMILIES["side_effects"]
COLLECTIVES: frozenset[str] = _FAMILIES["collectives"]
RANDOM: frozenset[str] = _FAMILIES["random"]
RESTATES: frozenset[str] = _FAMILIES["restates"]
# a collective as one kind, sync or async (`all-gather-start` is an `all-gather`)
COLLECTIVE_KINDS = frozenset(op.removesuffix("-start") for op in COLLECTIVES)
# the collectives whose devices are `replica_groups` (collective-permute names source-target pairs)
REPLICA_GROUP_COLLECTIVES = COLLECTIVES - {"collective-permute", "collective-permute-start"}
