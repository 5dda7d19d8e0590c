"""The canonical form's attribute rules as the diagnosis and the rendering ask them: what two
instructions compare of an attribute, a forwarded root's own attributes, a frontend dict's
entries. The compiled core answers (rust/src/canon/attributes.rs, through
rust/src/py/attributes.rs): the rules that make the hashes, written once.
tests/oracles/hashes_reference.py is their readable reference, held equal to the core on every
instruction of every fixture module (tests/test_attribute_rules.py)."""

from __future__ import annotations

from xlagraph import _core
from xlagraph.ir import Instruction

__all__ = [
    "attribute_values",
    "compared_values",
    "frontend_entries",
    "normalize_attribute",
    "plumbing_attributes",
]


def compared_values(ins: Instruction) -> list[str | None]:
    """Each of `ins.attributes`' values, in order, as two instructions compare it: whitespace
    dropped outside strings, iota replica groups expanded, frontend entries and backend configs
    in key order; None where it never makes them differ (identifiers, annotations, empty)."""
    return _core.compared_values(ins.opcode, ins.payload, ins.attributes)


def attribute_values(ins: Instruction, *, called: bool = True) -> dict[str, str]:
    """`{key: compared value}` of the attributes that can make two instructions differ; without
    those naming called computations when not `called` (their hashes compare those)."""
    return _core.attribute_values(ins.opcode, ins.payload, ins.attributes, called)


def plumbing_attributes(ins: Instruction) -> str:
    """What a root tuple (or a forwarding get-tuple-element) says beyond its operands, such as
    the outputs' shardings, as `key=value` joined by `;`: forwarding drops the instruction
    itself, so this enters its computation's identity instead."""
    return _core.plumbing_attributes(ins.opcode, ins.payload, ins.attributes)


def normalize_attribute(key: str, value: str) -> str:
    """The attribute value as compared: whitespace dropped outside strings, iota replica groups
    expanded (invalid ones stay as printed)."""
    return _core.normalize_attribute(key, value)


def frontend_entries(value: str) -> list[str]:
    """The top-level `key=value` entries of a `{...}` dict (commas in strings and braces kept)."""
    return _core.frontend_entries(value)
