"""The compiled reader's two orders of work (`IR_FIRST`: the Python IR before the canonical
form, as a diff's second side is read) give the same module and canonical form."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURE_PAIRS, load_pair_side
from xlagraph.canonical import canonicalize
from xlagraph.parse.hlo import IR_FIRST

SPECS = sorted({spec for pair in FIXTURE_PAIRS for spec in pair})


def _load(spec: str, ir_first: bool):  # type: ignore[no-untyped-def]
    return load_pair_side(spec, IR_FIRST, ir_first)


@pytest.mark.parametrize("batch", range(2))
def test_either_order_reads_the_same_module(batch: int) -> None:
    compared = 0
    for spec in SPECS[batch::2]:
        a, b = _load(spec, False), _load(spec, True)
        if a.format != "hlo":
            continue
        parts = [(m.name, m.header, m.notes, m.stack_frames) for m in (a, b)]
        assert parts[0] == parts[1], spec
        fields = [[(c.name, c.instructions, c.is_entry, c.line) for c in m.computations] for m in (a, b)]
        assert fields[0] == fields[1], spec
        ca, cb = canonicalize(a), canonicalize(b)
        assert (ca.fingerprint, ca.order) == (cb.fingerprint, cb.order), spec
        for name, x in ca.computations.items():
            y = cb.computations[name]
            assert (x.core is None) == (y.core is None), spec
            for field in ("operands", "keys", "h0", "h1", "param_number", "outputs", "order"):
                assert getattr(x, field) == getattr(y, field), f"{spec} {name}.{field}"
        compared += 1
    assert compared > 20
