"""Fixes are claims: each fix text the torch.compile half prints, applied as written to a real
torch_xla 2.9 scenario, compiles fewer graphs (fixtures/torch_xla/compiled: scenarios/NAME.py the
bug, fixes/NAME_fixed.py the fix, the edit marked `# FIX`). Counted by measure.py's child hook:
torch_xla's CompileTime (and EagerOpCompileTime in eager mode), or dynamo's unique graphs where
the backend is not XLA."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from xlagraph.diagnose.dynamo_join.breaks import break_fix
from xlagraph.diagnose.fixes import EAGER_SHAPE_FIX
from xlagraph.diagnose.guards import fix_for

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "fixtures" / "torch_xla" / "compiled"
sys.path.insert(0, str(BASE))
measure = pytest.importorskip("measure")  # fixtures/torch_xla/compiled/measure.py
pytest.importorskip("torch_xla")

# (scenario, the fix text it proves, a phrase of that text the fixed script applies)
PAIRS = [
    ("batch_size", fix_for("tensor_size"), "pad the input to one fixed size"),
    ("cache_limit", fix_for("tensor_size"), "pad the input to one fixed size"),
    ("aot_eager_shape", fix_for("tensor_size"), "torch._dynamo.mark_dynamic(x, dim)"),
    ("dtype_change", fix_for("tensor_dtype"), "cast the input to one dtype"),
    ("input_requires_grad", fix_for("tensor_requires_grad"), "inputs of one requires_grad"),
    ("int_arg", fix_for("python_scalar"), "pass it as a tensor on the device"),
    ("flag_global", fix_for("global_value"), "pass the value as an argument"),
    ("flag_attr", fix_for("module_attribute"), "a tensor if it changes"),
    ("train_eval", fix_for("grad_mode"), "evaluate with the uncompiled module"),
    ("graph_break", break_fix("Failed to trace builtin operator", "builtin print"), "print after the call"),
    ("item_in_compiled", break_fix("Unsupported Tensor.item() call"), "keep it a tensor"),
    ("eager_shape", EAGER_SHAPE_FIX, "pad the input to one fixed size"),
    ("list_length", fix_for("sequence_length"), "pass every item on every call"),
    ("dict_key", fix_for("dict_key"), "pass a dict with the same keys on every call"),
    ("loss_switch", fix_for("object_identity"), "pass its values as tensors"),
]


def _count(script: Path) -> int:
    proc, record = measure.run_counted(script)
    assert proc.returncode == 0 and record is not None, proc.stderr[-2000:]
    if not record["torch_xla"]:
        return record["dynamo"]["unique_graphs"]
    return record["xla_compiles"] + record.get("eager_op_compiles", 0)  # eager mode: per op


@pytest.mark.parametrize(("name", "text", "phrase"), PAIRS, ids=[p[0] for p in PAIRS])
def test_fix_applied_as_written_compiles_fewer(name: str, text: str, phrase: str) -> None:
    assert phrase in text  # the fix the tool prints is the one the script applies
    fixed = BASE / "fixes" / f"{name}_fixed.py"
    assert "# FIX" in fixed.read_text()
    assert _count(fixed) < _count(BASE / "scenarios" / f"{name}.py")
