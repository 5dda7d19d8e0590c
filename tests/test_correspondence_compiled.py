"""The compiled colour refinement pairs exactly what the Python reference pairs: on every
computation pair the diffs of every fixture pair compare (tests/data/fixture_pairs.txt), and on
the metamorphic transformations of real modules, `correspond` through the core equals
`correspond_reference` (tests/oracles/refinement_reference.py: every round in Python). The core's
colours are other numbers; the classes they make, round by round, must be the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURE_PAIRS, pair_spec
from tests.oracles.refinement_reference import Graph, correspond_reference, history_python, same_classes
from xlagraph.diff import diff_files
from xlagraph.match import refinement
from xlagraph.match.correspondence import Correspondence, _correspond

PAIRS = FIXTURE_PAIRS
ROOT = Path(__file__).resolve().parent.parent


_spec = pair_spec


def _both(left, right) -> tuple[Correspondence, Correspondence]:
    return _correspond(left, right), correspond_reference(left, right)


@pytest.mark.parametrize("batch", range(8))
def test_compiled_refinement_pairs_what_the_reference_pairs(batch: int) -> None:
    compared = 0
    for a, b in PAIRS[batch::8]:
        result = diff_files(_spec(a), _spec(b))
        for pair in result.pairs:
            left, right = result.left.computations[pair.left], result.right.computations[pair.right]
            got, want = _both(left, right)
            assert got == want, (a, b, pair.left)
            compared += 1
    assert compared


@pytest.mark.parametrize("batch", range(4))
def test_compiled_rounds_split_exactly_like_the_reference(batch: int) -> None:
    """Stronger than equal answers: the same classes at every round, across both graphs at once."""
    compared = 0
    for a, b in PAIRS[batch::16]:
        result = diff_files(_spec(a), _spec(b))
        for pair in result.pairs:
            left, right = result.left.computations[pair.left], result.right.computations[pair.right]
            ga, gb = Graph(left), Graph(right)
            core_a, core_b = refinement.compiled_graphs([(left, False), (right, False)])
            for first in ("loose", "strict"):
                strict = first == "strict"
                fa, fb = core_a.first_colours(strict), core_b.first_colours(strict)
                ca, cb = refinement.history_from(core_a, core_b, fa, fb)
                pa, pb = history_python(ga, gb, first)
                # Joined, so a colour shared across the graphs must be shared in both colourings.
                assert same_classes(
                    [x + y for x, y in zip(ca, cb, strict=True)], [x + y for x, y in zip(pa, pb, strict=True)]
                ), (a, b, first)
                compared += 1
    assert compared


def test_users_at_other_operand_indices_are_told_apart_under_any_hash_seed() -> None:
    """A model's input `x` read as operand 0 and its weights read as operand 1 by the same two
    users: a sum of Python tuple hashes once made them alike for some string-hash seeds (3 among
    them), so look-alike ties hid the input. Both implementations keep them apart."""
    import os
    import subprocess
    import sys

    script = (
        "from xlagraph.diff import diff_files\n"
        "from tests.oracles.refinement_reference import Graph, history_python\n"
        "from xlagraph.match import refinement\n"
        f"r = diff_files({str(ROOT / 'fixtures/jax/wild2/remat_policy/b.hlo')!r},"
        f" {str(ROOT / 'fixtures/jax/wild2/remat_policy/a.hlo')!r})\n"
        "comp = r.left.computations[r.pairs[0].left]\n"
        "g, c = Graph(comp), refinement.compiled_graphs([(comp, False)])[0]\n"
        "x, w = g.index['x.1'], g.index['ws_0_.1']\n"
        "core = refinement.history_from(c, c, c.first_colours(False), c.first_colours(False))[0]\n"
        "for hist in (core, history_python(g, g, 'loose')[0]):\n"
        "    assert hist[-1][x] != hist[-1][w], 'x looks like a weight'\n"
    )
    for seed in ("3", "0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        r = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
        )
        assert r.returncode == 0, (seed, r.stderr[-2000:])
