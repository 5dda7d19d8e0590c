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
from tests.oracles.hashes_reference import COMPUTATION_ATTRIBUTES, IGNORED_ATTRIBUTES
from xlagraph.canonical import canonicalize
from xlagraph.ir import Computation, Instruction, Module
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


# -- called computations keep their interface: parameter numbers and output order ---------------


def _called_tuples(module: Module) -> list[tuple[Computation, Instruction]]:
    """Called computations whose ROOT tuple has two elements with different structural hashes (in
    the module as written: its `call`s' callees are inlined away in the form the engine compares)."""
    canon = canonicalize(replace(module, inlined=None, core=None))
    found = []
    for comp in module.computations:
        root = comp.root
        if comp.is_entry or root.opcode != "tuple" or len(root.operands) < 2:
            continue
        h1 = canon.computations[comp.name].h1
        if len({h1.get(o) for o in root.operands}) > 1:
            found.append((comp, root))
    return found


def _swappable_parameters(module: Module) -> list[tuple[Computation, Instruction, Instruction]]:
    """Two same-shape parameters of a called computation read in order by a non-commutative op."""
    found = []
    for comp in module.computations:
        if comp.is_entry:
            continue
        params = {i.name: i for i in comp.instructions if i.opcode == "parameter"}
        for ins in comp.instructions:
            ops = ins.operands
            if ins.opcode in ("compare", "subtract", "divide") and len(ops) == 2 and ops[0] != ops[1]:
                a, b = params.get(ops[0]), params.get(ops[1])
                if a is not None and b is not None and a.shape == b.shape:
                    found.append((comp, a, b))
    return found


def _with(module: Module, comp: Computation, new: dict[str, Instruction]) -> Module:
    instrs = tuple(new.get(i.name, i) for i in comp.instructions)
    return replace(
        module,
        computations=tuple(replace(c, instructions=instrs) if c is comp else c for c in module.computations),
    )


WITH_CALLED_TUPLES = [p for p in REAL if _called_tuples(_load(p))]


@pytest.mark.parametrize("path", WITH_CALLED_TUPLES, ids=lambda p: str(p.relative_to(FIXTURES)))
@SETTINGS
@given(data=st.data())
def test_reordering_a_called_tuple_changes_fingerprint(path: Path, data: st.DataObject) -> None:
    module = _load(path)
    comp, root = data.draw(st.sampled_from(_called_tuples(module)))
    h1 = canonicalize(replace(module, inlined=None, core=None)).computations[comp.name].h1
    ops = list(root.operands)
    i, j = data.draw(
        st.sampled_from(
            [(i, j) for i in range(len(ops)) for j in range(i) if h1.get(ops[i]) != h1.get(ops[j])]
        )
    )
    ops[i], ops[j] = ops[j], ops[i]
    assert _fingerprint(_with(module, comp, {root.name: root._replace(operands=tuple(ops))})) != _fingerprint(
        module
    )


def test_real_modules_have_called_tuples() -> None:
    assert WITH_CALLED_TUPLES


@pytest.mark.parametrize(
    "text",
    [
        # Hand-written (labelled): a sort comparator and a non-commutative reducer.
        "HloModule m\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT c = pred[] compare(a, b), direction=GT\n}\nENTRY e {\n  x = f32[8] parameter(0)\n"
        "  ROOT s = f32[8] sort(x), dimensions={0}, to_apply=cmp\n}\n",
        "HloModule m\nr {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT c = f32[] subtract(a, b)\n}\nENTRY e {\n  x = f32[8] parameter(0)\n"
        "  z = f32[] constant(0)\n  ROOT s = f32[] reduce(x, z), dimensions={0}, to_apply=r\n}\n",
    ],
)
def test_swapping_called_parameter_numbers_changes_fingerprint(text: str) -> None:
    module = parse_hlo(text)
    for comp, a, b in _swappable_parameters(module):
        swapped = _with(
            module, comp, {a.name: a._replace(payload=b.payload), b.name: b._replace(payload=a.payload)}
        )
        assert _fingerprint(swapped) != _fingerprint(module)
    assert _swappable_parameters(module)


WITH_SWAPPABLE = [p for p in REAL if _swappable_parameters(_load(p))]


@pytest.mark.parametrize("path", WITH_SWAPPABLE, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_swapping_real_called_parameter_numbers_changes_fingerprint(path: Path) -> None:
    module = _load(path)
    for comp, a, b in _swappable_parameters(module):
        swapped = _with(
            module, comp, {a.name: a._replace(payload=b.payload), b.name: b._replace(payload=a.payload)}
        )
        assert _fingerprint(swapped) != _fingerprint(module), (comp.name, a.name, b.name)
    assert len(WITH_SWAPPABLE) >= 2
