"""Properties of the canonical fingerprint, checked with hypothesis on real modules.

Renaming every instruction, printing independent instructions in another (topological) order
and permuting parameter numbers never change the fingerprint; changing one live constant or one
live attribute always does. The transformations act on the IR and the result is printed back to
HLO text and read again, so the reader is exercised too.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from xlagraph.canonical import canonicalize
from xlagraph.canonical.hashes import IGNORED_ATTRIBUTES
from xlagraph.ir import COMPUTATION_ATTRIBUTES, Computation, Instruction, Module
from xlagraph.parse.hlo import parse_hlo

REAL = [
    FIXTURES / "jax" / "showcase.short.hlo",
    FIXTURES / "jax" / "train_step.compiled.hlo",
    FIXTURES / "jax" / "spmd_shard_map.compiled.hlo",
    FIXTURES / "jax" / "pairs" / "output_added" / "b.hlo",
]
REAL += sorted((FIXTURES / "torch_xla").glob("*/a.hlo"))[:6]

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load(path: Path) -> Module:
    return parse_hlo(path.read_text(), str(path))


def _print(module: Module) -> str:
    """Short-form HLO text of the IR (enough for the reader; metadata is dropped)."""
    out = [f"HloModule {module.name}", ""]
    for comp in module.computations:
        out.append(f"{'ENTRY ' if comp.is_entry else ''}{comp.name} {{")
        for ins in comp.instructions:
            inside = ins.payload if ins.opcode in ("parameter", "constant") else ", ".join(ins.operands)
            attrs = "".join(f", {k}={v}" for k, v in ins.attributes)
            root = "ROOT " if ins.is_root else ""
            out.append(f"  {root}{ins.name} = {ins.shape} {ins.opcode}({inside}){attrs}")
        out += ["}", ""]
    return "\n".join(out)


def _fingerprint(module: Module) -> str:
    return canonicalize(parse_hlo(_print(module))).fingerprint


def _rename(module: Module, salt: int) -> Module:
    names = {c.name: f"c{salt}_{k}" for k, c in enumerate(module.computations)}
    comps = []
    for comp in module.computations:
        local = {i.name: f"v{salt}_{(k * 7919 + salt) % 1000003}" for k, i in enumerate(comp.instructions)}

        def sub(value: str, key: str, local: dict[str, str] = local) -> str:
            if key in COMPUTATION_ATTRIBUTES:
                return re.sub(r"[A-Za-z_][\w.\-]*", lambda m: names.get(m.group(0), m.group(0)), value)
            if key == "control-predecessors":
                return re.sub(r"[A-Za-z_][\w.\-]*", lambda m: local.get(m.group(0), m.group(0)), value)
            return value

        instrs = tuple(
            i._replace(
                name=local[i.name],
                operands=tuple(local[o] for o in i.operands),
                called=tuple(names[c] for c in i.called),
                attributes=tuple((k, sub(v, k)) for k, v in i.attributes),
            )
            for i in comp.instructions
        )
        comps.append(replace(comp, name=names[comp.name], instructions=instrs))
    return replace(module, computations=tuple(comps))


def _reorder(module: Module, data: st.DataObject) -> Module:
    """Another topological order of every computation, drawn by hypothesis."""
    comps = []
    for comp in module.computations:
        pending = {i.name: set(i.operands) for i in comp.instructions}
        by_name = comp.by_name
        ordered: list[Instruction] = []
        while pending:
            ready = sorted(n for n, deps in pending.items() if not deps)
            pick = ready[data.draw(st.integers(0, len(ready) - 1))]
            ordered.append(by_name[pick])
            del pending[pick]
            for deps in pending.values():
                deps.discard(pick)
        comps.append(replace(comp, instructions=tuple(ordered)))
    return replace(module, computations=tuple(comps))


def _permute_parameters(module: Module, data: st.DataObject) -> Module:
    entry = module.entry
    params = [i for i in entry.instructions if i.opcode == "parameter"]
    order = data.draw(st.permutations(list(range(len(params)))))
    new_number = {p.name: str(order[int(p.payload)]) for p in params}
    instrs = tuple(
        i._replace(payload=new_number[i.name]) if i.name in new_number else i for i in entry.instructions
    )
    comps = tuple(replace(c, instructions=instrs) if c is entry else c for c in module.computations)
    return replace(module, computations=comps)


def _live(module: Module) -> set[tuple[str, str]]:
    canon = canonicalize(module)
    return {(c.name, n) for c in canon.computations.values() for n in c.order}


@pytest.fixture(scope="module", params=REAL, ids=lambda p: str(p.relative_to(FIXTURES)))
def real(request: pytest.FixtureRequest) -> tuple[Module, str]:
    module = _load(request.param)
    return module, _fingerprint(module)


@SETTINGS
@given(salt=st.integers(1, 10_000))
def test_renaming_keeps_fingerprint(real: tuple[Module, str], salt: int) -> None:
    module, fingerprint = real
    assert _fingerprint(_rename(module, salt)) == fingerprint


@SETTINGS
@given(data=st.data())
def test_reordering_independent_instructions_keeps_fingerprint(
    real: tuple[Module, str], data: st.DataObject
) -> None:
    module, fingerprint = real
    assert _fingerprint(_reorder(module, data)) == fingerprint


@SETTINGS
@given(data=st.data())
def test_permuting_parameters_keeps_fingerprint(real: tuple[Module, str], data: st.DataObject) -> None:
    module, fingerprint = real
    assert _fingerprint(_permute_parameters(module, data)) == fingerprint


def _scalar_constants(module: Module) -> list[tuple[Computation, Instruction]]:
    live = _live(module)
    return [
        (c, i)
        for c in module.computations
        for i in c.instructions
        if i.opcode == "constant"
        and re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", i.payload)
        and (c.name, i.name) in live
    ]


def _changed_payload(payload: str) -> str:
    value = float(payload)
    new = value + 1.5 if value != -1.5 else 7.25
    return repr(new) if "." in payload or "e" in payload else str(int(value) + 1)


WITH_CONSTANTS = [p for p in REAL if _scalar_constants(_load(p))]


@pytest.fixture(scope="module", params=WITH_CONSTANTS, ids=lambda p: str(p.relative_to(FIXTURES)))
def with_constants(request: pytest.FixtureRequest) -> tuple[Module, str]:
    module = _load(request.param)
    return module, _fingerprint(module)


@SETTINGS
@given(data=st.data())
def test_changing_one_constant_changes_fingerprint(
    with_constants: tuple[Module, str], data: st.DataObject
) -> None:
    module, fingerprint = with_constants
    candidates = _scalar_constants(module)
    comp, ins = data.draw(st.sampled_from(candidates))
    changed = ins._replace(payload=_changed_payload(ins.payload))
    new_comp = replace(comp, instructions=tuple(changed if i is ins else i for i in comp.instructions))
    mutated = replace(module, computations=tuple(new_comp if c is comp else c for c in module.computations))
    assert _fingerprint(mutated) != fingerprint


_MUTABLE = {
    "dimensions",
    "slice",
    "index",
    "direction",
    "iota_dimension",
    "replica_groups",
    "comparison_direction",
}


def _mutable_attributes(module: Module) -> list[tuple[Computation, Instruction, str]]:
    live = _live(module)
    return [
        (c, i, k)
        for c in module.computations
        for i in c.instructions
        if (c.name, i.name) in live
        for k, _ in i.attributes
        if k in _MUTABLE and k not in IGNORED_ATTRIBUTES and i.opcode not in ("get-tuple-element", "tuple")
    ]


def test_every_real_module_has_something_to_mutate() -> None:
    assert WITH_CONSTANTS
    assert all(_mutable_attributes(_load(p)) for p in REAL)


@SETTINGS
@given(data=st.data())
def test_changing_one_attribute_changes_fingerprint(real: tuple[Module, str], data: st.DataObject) -> None:
    module, fingerprint = real
    candidates = _mutable_attributes(module)
    comp, ins, key = data.draw(st.sampled_from(candidates))
    value = ins.attribute(key) or ""
    new_value = value + "9" if not value.endswith("}") else value[:-1] + ",9}"
    if key == "direction":
        new_value = "NE" if value != "NE" else "EQ"
    changed = ins._replace(attributes=tuple((k, new_value if k == key else v) for k, v in ins.attributes))
    new_comp = replace(comp, instructions=tuple(changed if i is ins else i for i in comp.instructions))
    mutated = replace(module, computations=tuple(new_comp if c is comp else c for c in module.computations))
    assert _fingerprint(mutated) != fingerprint
