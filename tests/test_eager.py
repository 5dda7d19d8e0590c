"""`diagnose.eager` judges eager mode's op compiles on real captures: an op compiled after the first
step is a recompile only against the same op at the same call site (the report words the steps,
`report/eager.py`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from xlagraph.capture.reader import read_capture
from xlagraph.diagnose.eager import OpShapes, eager_fix, later_ops
from xlagraph.diagnose.fixes import EAGER_SHAPE_FIX
from xlagraph.parse.sources import load_module
from xlagraph.report.eager import op_of

BASE = Path(__file__).resolve().parents[1] / "fixtures" / "torch_xla" / "compiled"


def _ops(capture: Path) -> list[OpShapes]:
    """Each op module eager mode compiled, as `report/eager.py` reads it (every module was kept)."""
    (log,) = read_capture(str(capture))
    ops = []
    for c in log.eager:
        op, shapes, at, ins, lines = op_of(load_module(c.module))
        ops.append(OpShapes(c.step, op, at, (*ins, shapes.rpartition(" -> ")[2]), lines))
    return ops


def test_the_same_op_of_other_code_is_new_work_not_a_recompile() -> None:
    """heldout3's validation runs eagerly first at step 5: its `aten::expand` at line 69 shares only
    its name with step 0's expands of other lines."""
    ops = _ops(BASE / "heldout3_captures" / "eager_masked_train" / "capture")
    judged = later_ops(ops, min(o.step for o in ops))
    assert len(judged) == 18 and all(o.was is None and not o.dims for o in judged)
    expand = [
        o for o in judged if ops[o.index].op == "aten::expand" and o.at.endswith("eager_masked_train.py:69")
    ]
    assert expand and any(o.op == "aten::expand" and o.step == 0 for o in ops)
    assert eager_fix(judged) == ""


def test_an_op_compiled_again_at_its_call_site_for_new_shapes_is_a_recompile() -> None:
    """eager_shape's batch grows 8 -> 11 at step 3: every op of the step compiled before at its
    line, each cited at the line that made the changed input."""
    ops = _ops(BASE / "captures" / "eager_shape" / "capture")
    judged = later_ops(ops, min(o.step for o in ops))
    assert len(judged) == 15 and all(o.was is not None and ops[o.index].step == 3 for o in judged)
    assert Counter(d for o in judged for d in o.dims).most_common(1)[0][0] == "8 -> 11"
    assert any(o.at.endswith(("eager_shape.py:22", "eager_shape.py:23")) for o in judged)
    assert eager_fix(judged) == EAGER_SHAPE_FIX
