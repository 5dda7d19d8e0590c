"""The core's handle on a canonical computation (rust/src/canon/handle.rs) gives the matcher and the
correspondence (rust/src/matching/from_handle.rs) the structures the Python oracles build from the
canonical form's dictionaries: the users of each instruction, the pairs the matcher makes
(tests/oracles/match_reference.py) and the refinement's graph and rounds
(tests/oracles/refinement_reference.py), on every computation of every module
the fixture pairs diff (tests/data/fixture_pairs.txt)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURE_PAIRS, pair_spec
from tests.oracles.match_reference import match_reference
from tests.oracles.refinement_reference import Graph, history_python, same_classes
from xlagraph.canonical import canonicalize
from xlagraph.match import match, refinement
from xlagraph.match._compiled import Users
from xlagraph.match.multiply_by_one import identity_multiplies
from xlagraph.match.users import users_of
from xlagraph.opcodes import COMMUTATIVE
from xlagraph.parse.sources import load_module

_core = pytest.importorskip("xlagraph._core")

PAIRS = FIXTURE_PAIRS
SPECS = sorted({spec for pair in PAIRS for spec in pair})


_spec = pair_spec


def _users_reference(comp) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    """`users.users_of` written over the canonical dictionaries: users in `order`."""
    built: dict[str, list[str]] = {}
    for name in comp.order:
        for o in comp.operands[name]:
            built.setdefault(o, []).append(name)
    return built


def _history(graph, strict: bool):  # type: ignore[no-untyped-def]
    every = list(range(len(graph)))
    return _core.refine_picked(graph, graph, strict, refinement.ROUNDS, every, every)[0]


def test_every_fixture_module_is_listed() -> None:
    assert len(SPECS) > 300


@pytest.mark.parametrize("batch", range(4))
def test_handle_builds_what_the_oracles_build(batch: int) -> None:
    compared = 0
    for spec in SPECS[batch::4]:
        module = load_module(_spec(spec))
        if module.format != "hlo":
            continue
        for comp in canonicalize(module).computations.values():
            got_side = _core.match_side_of(comp.core, COMMUTATIVE)
            got_graph = _core.refine_graphs_of(
                [(comp.core, list(identity_multiplies(comp).by_index))],
                COMMUTATIVE,
                refinement.first_colours,
                refinement.OUTPUT,
            )[0]
            # The users as a mapping over the copy (`bottom_up.users_of`): `users.users_of`'s rule
            # written over the canonical dictionaries, keys in its order, the same lists, and the
            # same answer for every name, with users or not.
            users, reference = Users(_core.side_users_mapping(got_side)), _users_reference(comp)
            assert list(users) == list(reference) and len(users) == len(reference), (spec, comp.name)
            assert dict(users.items()) == reference, (spec, comp.name)
            assert list(users_of(comp)) == list(reference), (spec, comp.name)
            for name in (*comp.computation.by_name, "no such name"):
                assert users.get(name) == reference.get(name), (spec, comp.name, name)
                assert users.get(name, ()) == reference.get(name, ()), (spec, comp.name, name)
                assert (name in users) == (name in reference), (spec, comp.name, name)
            # The matcher's copy: every pair it makes with itself, as the Python matcher makes them.
            got, want = match(comp, comp), match_reference(comp, comp)
            assert list(got.left.items()) == list(want.left.items()), (spec, comp.name)
            assert list(got.right.items()) == list(want.right.items()), (spec, comp.name)
            assert list(got.matcher.items()) == list(want.matcher.items()), (spec, comp.name)
            # The correspondence's graph: the nodes, inputs and outputs of the Python graph
            # (multiplies by one seen through), and the classes of the Python rounds at every round
            # from both first colourings.
            graph = Graph(comp, see_through=True)
            assert len(got_graph) == len(graph.names), (spec, comp.name)
            assert got_graph.params == graph.params, (spec, comp.name)
            assert list(got_graph.param_names) == [graph.names[i] for i in graph.params], (spec, comp.name)
            assert got_graph.outputs == graph.outputs, (spec, comp.name)
            for strict in (True, False):
                want_rounds = history_python(graph, graph, "strict" if strict else "loose")[0]
                assert same_classes(_history(got_graph, strict), want_rounds), (spec, comp.name, strict)
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
