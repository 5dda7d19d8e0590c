"""Updates called through a table of functions (issue 37), on real torch_xla 2.9 captures: held_out_39's
h39_kiln_compiled_stats_flip2_logged (its recompile 3/4, graph E at step 6, whose sync holds no live
tensors) and fixtures/torch_xla/dispatch (its generate.py): a `torch_xla.compile`d step updates two
statistics through `UPDATERS[name](...)`, a dict of a helper module's functions, in an order the
caller flips (every other step; once, late). Each reordering cites first where the caller sets the
order, then the call, then the loop over the compiled function's parameter."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose import CauseKind

CORPUS = FIXTURES / "torch_xla" / "corpus"
DISPATCH = FIXTURES / "torch_xla" / "dispatch"
_PREFIX = "fixtures/torch_xla/corpus/"


def _permutations(folder):  # type: ignore[no-untyped-def]
    report = capture_report(folder)
    found = [
        c
        for r in report.recompiles
        if not r.expected
        for c in r.causes
        if c.kind is CauseKind.OUTPUT_PERMUTATION
    ]
    assert found, [c.summary for r in report.recompiles for c in r.causes]
    return found


def test_kiln_every_reordering_cites_the_callers_order_first() -> None:
    name = "h39_kiln_compiled_stats_flip2_logged"
    script = f"{_PREFIX}scripts/{name}.py"
    decided = [
        script_line(script, text).replace(_PREFIX, "")
        for text in ("order = names if", "loss, gnorm = train_step(", "for name in order:")
    ]
    causes = _permutations(CORPUS / "captures" / name)
    assert len(causes) == 2  # recompile 1 (live tensors seen) and 3 (none: the table call is read)
    for cause in causes:
        assert list(cause.sources[:3]) == decided, cause.sources


def test_dispatch_captures_cite_the_callers_order_first() -> None:
    for name in ("table_updaters", "table_updaters_late"):
        script = f"fixtures/torch_xla/dispatch/{name}.py"
        decided = [
            script_line(script, t) for t in ("order = names if", "loss = train_step(", "for name in order:")
        ]
        folder = next((DISPATCH / f"{name}_capture").iterdir())
        for cause in _permutations(folder):
            assert list(cause.sources[:3]) == decided, (name, cause.sources)
            assert any("dispatch_stats.py" in s for s in cause.sources), cause.sources
