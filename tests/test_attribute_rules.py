"""The canonical form's attribute rules as the library asks them (`xlagraph.canonical.attributes`:
the compiled core, rust/src/canon/attributes.rs through rust/src/py/attributes.rs; the handle's
`effect_hashes`, rust/src/canon/effects.rs) give exactly the answers of their readable reference,
tests/oracles/hashes_reference.py: on every instruction of every fixture module (every attribute's
compared value, a root's own attributes, frontend entries, normalized values; every computation's
unread side effects, names, hashes and order), and on hand-written edge cases."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.oracles import hashes_reference as ref
from tests.test_canonical_speed_equivalence import _modules, _sources
from xlagraph import _core
from xlagraph.canonical import canonicalize
from xlagraph.canonical.attributes import (
    attribute_values,
    compared_values,
    frontend_entries,
    normalize_attribute,
    plumbing_attributes,
)
from xlagraph.errors import XlagraphError

SOURCES = _sources()


@pytest.mark.parametrize("batch", range(4))
def test_the_cores_attribute_rules_are_the_references(batch: int) -> None:
    instructions = effects = 0
    for path in SOURCES[batch::4]:
        for module in _modules(path):
            try:
                canon = canonicalize(module)
            except XlagraphError:
                continue  # refused by the core and the reference alike (the speed equivalence test)
            callee_hash = {name: c.hash for name, c in canon.computations.items()}
            for c in canon.computations.values():
                for ins in c.computation.instructions:
                    where = (str(path), c.name, ins.name)
                    want = [ref.compared_value(ins, k, v) for k, v in ins.attributes]
                    assert compared_values(ins) == want, where
                    _same_values(ins, want, where)
                    assert plumbing_attributes(ins) == ref.plumbing_attributes(ins), where
                    for k, v in ins.attributes:
                        assert normalize_attribute(k, v) == ref.normalize_attribute(k, v), (*where, k)
                        if k == "frontend_attributes":
                            assert frontend_entries(v) == ref.frontend_entries(v), (*where, k)
                    instructions += 1
                want_effects = ref.effect_hash_map(c.computation, (*c.dead, *c.plumbing), c.h1, callee_hash)
                got_effects = c.core.effect_hashes()  # type: ignore[attr-defined]
                assert list(got_effects.items()) == list(want_effects.items()), (str(path), c.name)
                effects += len(want_effects)
    assert instructions > 10_000
    if batch == 0:
        assert effects > 0  # fixtures with unread side effects (sends, outfeeds) are among them


def _same_values(ins, want: list[str | None], where: tuple) -> None:  # type: ignore[no-untyped-def]
    """`attribute_values`, with and without called computations: the reference's dictionaries,
    key order included."""
    for called in (True, False):
        expected = {
            k: cv
            for (k, _), cv in zip(ins.attributes, want, strict=True)
            if cv is not None and (called or k not in ref.COMPUTATION_ATTRIBUTES)
        }
        got = attribute_values(ins, called=called)
        assert list(got.items()) == list(expected.items()), (*where, called)


def _ins(opcode: str = "custom-call", payload: str = "") -> SimpleNamespace:
    return SimpleNamespace(opcode=opcode, payload=payload)


# Hand-written attribute values (parser edge cases): iota groups valid and not, spaces, quoted
# and malformed backend configs, Neuron's numbering-only frontend entries, ignored keys.
_CASES = [
    ("custom-call", "", "replica_groups", "[2,2]<=[4]"),
    ("custom-call", "", "replica_groups", "[2, 2]<=[4] T(0)"),
    ("custom-call", "", "replica_groups", "[2,2]<=[2,2]T(1,0)"),
    ("custom-call", "", "replica_groups", "[3,2]<=[4]"),
    ("custom-call", "", "replica_groups", "[2,2]<=[4]T(1)"),
    ("custom-call", "", "replica_groups", "[2,2]<=[,4]"),
    ("custom-call", "", "replica_groups", "{ {0, 1}, {2,3} }"),
    ("custom-call", "", "source_target_pairs", "{{0,1}, {1,\u20030}}"),
    ("custom-call", "", "backend_config", '{"b": 1, "a": [2, {"d": null, "c": "x y"}]}'),
    ("custom-call", "", "backend_config", '"{\\"b\\":1,\\"a\\":2}"'),
    ("custom-call", "", "backend_config", "{}"),
    ("custom-call", "", "backend_config", '""'),
    ("custom-call", "", "backend_config", "{not json, at all}"),
    ("custom-call", "", "backend_config", '{"a": 1e5, "b": -0.5, "c": 01}'),
    ("custom-call", "", "frontend_attributes", '{b="2",a="1", c={x, y}}'),
    ("parameter", " 5 ", "frontend_attributes", '{neff_input_names="input5"}'),
    ("parameter", "5", "frontend_attributes", '{neff_input_names="input4"}'),
    ("tuple", "", "frontend_attributes", '{neff_output_names="output0,output1"}'),
    ("tuple", "", "frontend_attributes", '{neff_output_names="output1,output0"}'),
    ("tuple", "", "frontend_attributes", "{}"),
    ("tuple", "", "frontend_attributes", "plain"),
    ("tuple", "", "sharding", "{{replicated}, {devices=[2,1]0,1}}"),
    ("tuple", "", "index", "1"),
    ("tuple", "", "calls", "%fused_computation.1"),
    ("tuple", "", "metadata", '{op_name="x"}'),
    ("tuple", "", "channel_id", "3"),
    ("tuple", "", "custom_call_target", '"a b"'),
]


@pytest.mark.parametrize(("opcode", "payload", "key", "value"), _CASES)
def test_hand_written_values(opcode: str, payload: str, key: str, value: str) -> None:
    ins = _ins(opcode, payload)
    ins.attributes = ((key, value), ("metadata", "{}"), (key, value + " "))
    want = [ref.compared_value(ins, k, v) for k, v in ins.attributes]  # type: ignore[arg-type]
    assert compared_values(ins) == want  # type: ignore[arg-type]
    _same_values(ins, want, (opcode, key, value))
    assert plumbing_attributes(ins) == ref.plumbing_attributes(ins)  # type: ignore[arg-type]
    assert normalize_attribute(key, value) == ref.normalize_attribute(key, value)
    assert frontend_entries(value) == ref.frontend_entries(value)


@pytest.mark.parametrize("text", ["", "x", "f32[4]{0}", "ü\u2003∑", "a" * 1000, repr([(1, "{1,0}")])])
def test_stable_hash(text: str) -> None:
    assert _core.stable_hash(text) == ref.stable_hash(text)  # the canonical form's hashes use it
