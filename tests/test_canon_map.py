"""The canonical form's tables by name and `Computation.by_name`, where the core keeps a handle,
are mappings over it (rust/src/canon/mapping.rs) that answer as the dictionaries they replace: the
dictionaries Python's canonicalization builds from the same module, on every computation of
every module the fixture pairs diff (tests/data/fixture_pairs.txt)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

import pytest

from tests.conftest import FIXTURE_PAIRS, pair_spec
from xlagraph.canonical import CanonicalComputation, canonicalize
from xlagraph.parse.sources import load_module

_core = pytest.importorskip("xlagraph._core")

SPECS = sorted({spec for pair in FIXTURE_PAIRS for spec in pair})
FIELDS = ("operands", "keys", "h0", "h1")


def _handled(specs: list[str]) -> Iterator[tuple[str, CanonicalComputation]]:
    """Each computation the core keeps a handle on, of each HLO module of `specs`."""
    for spec in specs:
        module = load_module(pair_spec(spec))
        if module.format == "hlo":
            for comp in canonicalize(module).computations.values():
                if comp.core is not None:
                    yield spec, comp


def _copy(name: str) -> str:
    """An equal string that is another object (lookups by content, not identity)."""
    return "".join(list(name))


def _same(mine: Mapping, ref: dict, where: str) -> None:
    assert isinstance(mine, Mapping), where
    assert len(mine) == len(ref), where
    assert list(mine) == list(ref), f"{where}: key order"
    assert list(mine.keys()) == list(ref.keys()), where
    assert list(mine.values()) == list(ref.values()), where
    assert list(mine.items()) == list(ref.items()), where
    assert mine == ref and ref == mine and mine == mine, where
    assert repr(mine) == repr(ref), where
    assert mine.keys() | {"not-a-name"} == ref.keys() | {"not-a-name"}, where
    for name, value in list(ref.items())[:: max(1, len(ref) // 200)]:
        for key in (name, _copy(name)):
            assert key in mine and mine[key] == value and mine.get(key) == value, f"{where}: {name}"
    for missing in ("not-a-name", "", 7, None, ("a",)):
        assert missing not in mine and mine.get(missing, "default") == "default", where
        with pytest.raises(KeyError):
            mine[missing]
    with pytest.raises(TypeError):
        mine.get(["unhashable"])


@pytest.mark.parametrize("batch", range(4))
def test_mappings_answer_as_the_dictionaries(batch: int) -> None:
    mapped = 0
    for spec in SPECS[batch::4]:
        module = load_module(pair_spec(spec))
        if module.format != "hlo":
            continue
        fast, ref = canonicalize(module), canonicalize(replace(module, core=None))
        for name, comp in fast.computations.items():
            if comp.core is None:
                assert all(type(getattr(comp, f)) is dict for f in FIELDS), f"{spec} {name}"
                continue
            mapped += 1
            for field in FIELDS:
                _same(getattr(comp, field), getattr(ref.computations[name], field), f"{spec} {name}.{field}")
            by_name = {i.name: i for i in comp.computation.instructions}
            _same(comp.computation.by_name, by_name, f"{spec} {name}.by_name")
            # Values are the IR's own objects where the dictionary held them.
            for i in comp.computation.instructions[:50]:
                assert comp.computation.by_name[i.name] is i
    assert mapped > 50


def test_mappings_other_than_mappings_are_unequal() -> None:
    _, comp = next(_handled(SPECS))  # (the first computation with a handle: never skipped)
    assert comp.h0 != list(comp.h0) and comp.h0 != 3 and comp.h0 != comp.h1
    assert comp.keys != {**comp.keys, "not-a-name": 1}
    assert comp.h0.copy() == dict(comp.h0) and type(comp.h0.copy()) is dict


@pytest.mark.parametrize("batch", range(2))
def test_constants_picked_by_the_core_are_pythons(batch: int) -> None:
    """`residue.constants_of` and `_elided_names` read the handle where there is one."""
    from xlagraph.diagnose.residue import is_elided

    seen = 0
    for spec, comp in _handled(SPECS[batch::2]):
        by_name = comp.computation.by_name
        live = tuple(n for n in comp.order if by_name[n].opcode == "constant")
        assert comp.core.live_constants() == live, spec
        constants = [i for i in comp.computation.instructions if i.opcode == "constant"]
        elided = {i.name for i in constants if is_elided(i.payload)}
        seen += len(elided)
        assert comp.core.elided_names() == elided, spec
    assert seen > 0  # fixtures print some constants as {...}


def _among_as_filter(mine: Mapping, comp: CanonicalComputation, where: str) -> None:
    """`keys_among(names)` is `[k for k in mine if k in names]`: names of the keys' computation
    paired or not, in any order, as other string objects, and none at all."""
    names = list(comp.computation.by_name)
    for picked in (names[::3], names[::-7], [_copy(n) for n in names[1::5]], [], set(names[::2])):
        wanted = set(picked)
        assert mine.keys_among(picked) == [k for k in mine if k in wanted], where


@pytest.mark.parametrize("batch", range(4))
def test_pair_mappings_answer_as_the_reference_matchers_dictionaries(batch: int) -> None:
    """The compiled matcher's `Matching.left`, `.right` and `.matcher` over two computations with
    handles are mappings over its pairs (canon_map.rs `PairMap`)."""
    from tests.oracles.match_reference import match_reference
    from xlagraph.diff import diff_files
    from xlagraph.match import match

    mapped = 0
    for a, b in FIXTURE_PAIRS[batch::4]:
        result = diff_files(pair_spec(a), pair_spec(b))
        for pair in result.pairs:
            if pair.matching is None:
                continue
            left, right = result.left.computations[pair.left], result.right.computations[pair.right]
            got = match(left, right)
            if type(got.left) is dict:
                assert left.core is None or right.core is None, (a, b)
                continue
            want = match_reference(left, right)
            for field in ("left", "right", "matcher"):
                _same(getattr(got, field), getattr(want, field), f"{a} {b} {pair.left}.{field}")
            for field, comp in (("left", left), ("right", right)):
                _among_as_filter(getattr(got, field), comp, f"{a} {b} {pair.left}.{field}")
            mapped += 1
    assert mapped > 20


@pytest.mark.parametrize("batch", range(2))
def test_what_the_handle_picks_is_what_python_picks(batch: int) -> None:
    """`scalar_ones` (identity multiplies' ones), `source_files` (the user's files a graph
    cites), `opcode_names` and `with_opcodes` (collectives, sends) read the handle."""
    from tests.oracles.multiply_by_one_reference import one

    files = 0
    for spec, comp in _handled(SPECS[batch::2]):
        instructions = comp.computation.instructions
        ones = [k for k, i in enumerate(instructions) if i.opcode == "constant" and one(i)]
        assert comp.core.scalar_ones() == ones, spec
        cited = [i.metadata.source_file for i in instructions if i.metadata and i.metadata.source_file]
        assert comp.core.source_files() == list(dict.fromkeys(cited)), spec
        files += len(cited)
        opcodes = [i.opcode for i in instructions]
        assert comp.core.opcode_names() == list(dict.fromkeys(opcodes)), spec
        for wanted in ({"constant"}, {"send", "all-reduce"}, set(opcodes[:3]), set()):
            picked = [k for k, o in enumerate(opcodes) if o in wanted]
            assert comp.core.with_opcodes(frozenset(wanted)) == picked, spec
    assert files > 0


def test_the_cores_ones_are_identitys() -> None:
    """rust/src/canon/handle.rs spells `multiply_by_one_reference.ONE` and `one` again: every
    spelling, padded and in capitals, and near misses (hand-written constants)."""
    from tests.oracles.multiply_by_one_reference import ONE, one
    from xlagraph.parse.hlo import parse_hlo

    values = [*sorted(ONE), " 1 ", "1.00", "01", "1e1", "-1", "2"]
    kind = {"true": "pred"}
    lines = [f"  c{k} = {kind.get(v, 'f32')}[] constant({v})" for k, v in enumerate(values)]
    lines += ["  v = f32[2]{0} constant({1, 1})", "  s = pred[] constant(true)"]
    text = "HloModule m\n\nENTRY e {\n" + "\n".join(lines) + "\n  ROOT t = f32[] add(c0, c1)\n}\n"
    module = parse_hlo(text, "hand-written.hlo")
    comp = canonicalize(module).entry
    assert comp.core is not None
    instructions = module.entry.instructions
    want = [k for k, i in enumerate(instructions) if i.opcode == "constant" and one(i)]
    assert comp.core.scalar_ones() == want and len(want) >= len(ONE) + 1


@pytest.mark.parametrize("batch", range(2))
def test_lone_parameters_from_the_handle_are_pythons(batch: int) -> None:
    """`pairing._lone_parameters` on the handle: the Python rule, on every fixture computation."""
    from collections import Counter

    from xlagraph.diagnose.shapes import shape_of

    compared = lone = alike = 0
    for spec, comp in _handled(SPECS[batch::2]):
        users: dict[str, list[str]] = {}
        for name in comp.order:
            for o in comp.operands[name]:
                users.setdefault(o, []).append(name)
        sig = {
            p: (
                shape_of(comp, p),
                tuple(sorted(comp.h0.get(u, comp.keys.get(u, 0)) for u in users.get(p, ()))),
            )
            for p in comp.param_number
        }
        seen = Counter(sig.values())
        want = frozenset(p for p, v in sig.items() if seen[v] == 1)
        assert comp.core.lone_parameters() == want, spec
        compared += 1
        lone += len(want)
        alike += len(sig) - len(want)
    assert compared > 50 and lone > 50 and alike > 50  # both answers occur


@pytest.mark.parametrize("batch", range(2))
def test_lone_h0_from_the_handle_is_pythons(batch: int) -> None:
    """`CanonicalComputation.lone_h0` on the handle: the name of the one live instruction with that
    `h0` by `Counter(comp.h0.values())`, None where several or none, on every fixture computation."""
    from collections import Counter

    compared = lone = shared = 0
    for spec, comp in _handled(SPECS[batch::2]):
        counts = Counter(comp.h0.values())
        holder = {v: name for name, v in comp.h0.items()}
        for v, n in counts.items():
            assert comp.lone_h0(v) == (holder[v] if n == 1 else None), spec
            lone += n == 1
            shared += n > 1
        for missing in (max(counts, default=0) + 1, -(2**63) - 1, 2**64, -1):
            if missing not in counts:
                assert comp.lone_h0(missing) is None, spec
        compared += 1
    assert compared > 50 and lone > 50 and shared > 50  # both answers occur


@pytest.mark.parametrize("batch", range(2))
def test_updated_inputs_from_the_handle_are_pythons(batch: int) -> None:
    """`_dataflow.updated_inputs` of all outputs on the handle: the Python rule, item for item."""
    from tests.oracles.updated_inputs_reference import updated_inputs_reference

    compared = found = 0
    for spec, comp in _handled(SPECS[batch::2]):
        want = updated_inputs_reference(comp, comp.outputs)
        assert list(comp.core.updated_inputs().items()) == list(want.items()), spec
        compared += 1
        found += len(want)
    assert compared > 50 and found > 50
