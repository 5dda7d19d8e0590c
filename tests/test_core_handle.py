"""The core's handle on a canonical computation (rust/src/canon/handle.rs) gives the matcher and the
correspondence exactly the structures they built from the Python IR and the canonical form's
dictionaries (rust/src/matching/from_handle.rs against `match_side` and `refine_graph`), on every
computation of every module the fixture pairs diff (tests/data/fixture_pairs.txt)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURE_PAIRS, pair_spec
from xlagraph.canonical import canonicalize
from xlagraph.ir import strip_layout
from xlagraph.match import refinement
from xlagraph.match._compiled import Users
from xlagraph.match.multiply_by_one import identity_multiplies
from xlagraph.match.shapes import dims
from xlagraph.match.users import users_of
from xlagraph.opcodes import COMMUTATIVE
from xlagraph.parse.sources import load_module

_core = pytest.importorskip("xlagraph._core")

PAIRS = FIXTURE_PAIRS
SPECS = sorted({spec for pair in PAIRS for spec in pair})


_spec = pair_spec


def _shape_key(shape: str) -> tuple[str, list[int] | None]:
    """`strip_layout(shape)` and its dims (`shapes.dims`), as the matcher reads them."""
    stripped = strip_layout(shape)
    return stripped, dims(stripped)


def _users_reference(comp) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    """`users.users_of` written over the canonical dictionaries: users in `order`."""
    built: dict[str, list[str]] = {}
    for name in comp.order:
        for o in comp.operands[name]:
            built.setdefault(o, []).append(name)
    return built


def _from_dicts(comp):  # type: ignore[no-untyped-def]
    # Where the core keeps a handle the tables are mappings over it (canon/handle.rs): their
    # dictionaries, item for item, are what the Python entry points read.
    tables = (comp.operands, comp.keys, comp.h0, comp.h1, comp.computation.by_name)
    operands, keys, h0, h1, by_name = map(dict, tables)
    instructions = comp.computation.instructions
    shapes = {s: _shape_key(s) for s in {i.shape for i in instructions}}
    side = _core.match_side(
        instructions,
        shapes,
        COMMUTATIVE,
        comp.order,
        operands,
        comp.outputs,
        h0,
        h1,
        comp.param_number,
    )
    graph = _core.refine_graph(
        by_name,
        comp.order,
        operands,
        comp.param_number,
        comp.outputs,
        COMMUTATIVE,
        refinement.first_colours,
        refinement.OUTPUT,
        keys,
        identity_multiplies(comp).by_name,
    )
    return side, graph


def _history(graph, strict: bool):  # type: ignore[no-untyped-def]
    every = list(range(len(graph)))
    return _core.refine_picked(graph, graph, strict, refinement.ROUNDS, every, every)


def test_every_fixture_module_is_listed() -> None:
    assert len(SPECS) > 300


@pytest.mark.parametrize("batch", range(4))
def test_handle_builds_what_the_dictionaries_build(batch: int) -> None:
    compared = 0
    for spec in SPECS[batch::4]:
        module = load_module(_spec(spec))
        if module.format != "hlo":
            continue
        for comp in canonicalize(module).computations.values():
            side, graph = _from_dicts(comp)
            got_side = _core.match_side_of(comp.core, COMMUTATIVE)
            got_graph = _core.refine_graph_of(
                comp.core,
                COMMUTATIVE,
                refinement.first_colours,
                refinement.OUTPUT,
                list(identity_multiplies(comp).by_index),
            )
            # The matcher's copy: its users, and every pair it makes with itself and with the
            # copy built the other way (all outputs unsent, one layout).
            assert _core.side_users(got_side) == _core.side_users(side), (spec, comp.name)
            # The users as a mapping over the copy (`bottom_up.users_of`): the dictionary's keys,
            # order and lists, and the same answer for every name, with users or not.
            users, want_users = Users(_core.side_users_mapping(got_side)), _core.side_users(side)
            assert list(users) == list(want_users) and len(users) == len(want_users), (spec, comp.name)
            assert users == want_users, (spec, comp.name)
            # ... and `users.users_of`'s rule written over the canonical dictionaries.
            reference = _users_reference(comp)
            assert list(users) == list(reference) and dict(users.items()) == reference, (spec, comp.name)
            assert list(users_of(comp)) == list(reference), (spec, comp.name)
            for name in (*comp.computation.by_name, "no such name"):
                assert users.get(name) == want_users.get(name), (spec, comp.name, name)
                assert users.get(name, ()) == want_users.get(name, ()), (spec, comp.name, name)
                assert (name in users) == (name in want_users), (spec, comp.name, name)
            sent = [False] * len(comp.outputs)
            want = _core.match_sides(side, side, sent, sent, False, [])
            assert _core.match_sides(got_side, got_side, sent, sent, False, []) == want, (spec, comp.name)
            assert _core.match_sides(got_side, side, sent, sent, False, []) == want, (spec, comp.name)
            # The correspondence's graph: nodes, inputs, outputs, and every node's colour at
            # every round from both first colourings (the same graph gives the same numbers).
            assert len(got_graph) == len(graph), (spec, comp.name)
            assert got_graph.params == graph.params, (spec, comp.name)
            assert got_graph.param_names == graph.param_names, (spec, comp.name)
            assert got_graph.outputs == graph.outputs, (spec, comp.name)
            for strict in (True, False):
                assert _history(got_graph, strict) == _history(graph, strict), (spec, comp.name, strict)
            compared += 1
    assert compared


@pytest.mark.parametrize("batch", range(2))
def test_h0_distance_is_the_counters_distance(batch: int) -> None:
    """A report's screen of candidate baselines (`baseline._h0_distance`) gives the core's merge
    of sorted hashes the answer of Python's counters, on the entries of every fixture pair."""
    from collections import Counter

    compared = 0
    for a, b in PAIRS[batch::2]:
        ma, mb = load_module(_spec(a)), load_module(_spec(b))
        ea, eb = canonicalize(ma).entry, canonicalize(mb).entry
        mine, theirs = Counter(ea.h0.values()), Counter(eb.h0.values())
        want = sum((mine - theirs).values()) + sum((theirs - mine).values())
        assert ea.core.h0_distance(eb.core) == want, (a, b)
        assert eb.core.h0_distance(ea.core) == want, (a, b)
        compared += 1
    assert compared > 100
