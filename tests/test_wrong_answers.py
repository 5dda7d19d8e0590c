"""Wrong answers found on real modules by the metamorphic sample, each fixed for its pattern and
kept here on the module that showed it (XLA's own parser-test modules, fixtures/xla_conformance)."""

from __future__ import annotations

import re

from tests.conftest import FIXTURES
from tests.metamorphic.transforms import apply, normalize
from xlagraph.diagnose import CauseKind
from xlagraph.diagnose.numbers import numbers_equal
from xlagraph.diff import diff_modules
from xlagraph.parse.hlo import parse_hlo

MODULES = FIXTURES / "xla_conformance" / "modules"


def _diff(a: str, b: str):  # type: ignore[no-untyped-def]
    return diff_modules(parse_hlo(a, "a.hlo"), parse_hlo(b, "b.hlo"))


def test_a_large_unsigned_constant_that_changed_is_named() -> None:
    """u64 values past 2^53 differ although their floats are equal: a changed constant, not the
    same number printed two ways (and no guess about parameter numbering)."""
    a = normalize((MODULES / "long.ConstantUnsignedNoOverflow.hlo").read_text())
    b = a.replace("9223372036854775807", "9223372036854775811")
    assert a != b
    (cause,) = _diff(a, b).causes
    assert cause.kind is CauseKind.CONSTANT_VALUE
    (change,) = cause.changes
    assert change.old.endswith("9223372036854775807") and change.new.endswith("9223372036854775811")
    assert numbers_equal("1", "1.0") and numbers_equal("1e3", "1000.0")
    assert not numbers_equal("9223372036854775807", "9223372036854775811")


def test_collectives_over_every_device_follow_resized_inputs_when_the_devices_are_the_same() -> None:
    """A ragged all-to-all (groups `{}`: every device) whose offsets and sizes were resized with
    the inputs: where both headers state the same replica count, the collective moves what the
    inputs hold, so the inputs' shapes are the one cause; another replica count keeps it."""
    a = normalize((MODULES / "short.RaggedAllToAll.hlo").read_text())
    b, exp = apply(a, ("batch",), 7)
    assert exp.reshaped
    assert [c.kind for c in _diff(a, b).causes] == [CauseKind.PARAMETER_SHAPE]
    other = re.sub(r"replica_count=\d+", "replica_count=16", b)
    assert other != b
    assert CauseKind.COLLECTIVE in {c.kind for c in _diff(a, other).causes}
