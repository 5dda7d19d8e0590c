"""Look-alike tensors reordered in real torch_xla 2.9 graphs (issue 19, part 1): the examples a
user met, made by fixtures/torch_xla/lookalike/generate.py from plain training scripts whose
Python order of creating or updating same-shaped tensors changes between two steps.

The expected mapping is known by construction, never from xlagraph (see generate.py): outputs by
torch_xla's tensor ids (a graph returns its live tensors in id order), inputs by running both
graphs with XLA (B fed A's inputs in the mapped order returns A's outputs), or, where a constant
changed too, by the inputs' shapes and source lines being the same sequence on both sides.

Each pair must give exactly its causes and exactly that mapping, also with the dumps' metadata
taken out (structure alone; torch_xla writes none without XLA_HLO_DEBUG)."""

from __future__ import annotations

import json
import lzma
import re
from functools import cache

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose import CauseKind
from xlagraph.diff import DiffResult, diff_modules
from xlagraph.parse.hlo import parse_hlo

HERE = FIXTURES / "torch_xla" / "lookalike"
MANIFEST = json.loads((HERE / "MANIFEST.json").read_text())
_METADATA = re.compile(r",\s*metadata=\{[^}]*\}")

# What each script changes, by construction: the reordering is one cause (an input order that
# follows is part of it), next to the one other change the script makes.
CAUSES = {
    "kv_cache": {CauseKind.OUTPUT_PERMUTATION},  # K and V caches (dict order)
    "adamw_pair": {CauseKind.OUTPUT_PERMUTATION},  # two AdamW updates of f32[2,16] weights
    "rope_tables": {CauseKind.OUTPUT_PERMUTATION},  # cos and sin trade places
    "three_cycle": {CauseKind.OUTPUT_PERMUTATION},  # three f32[16] statistics, a 3-cycle
    "llama_schedule": {CauseKind.OUTPUT_PERMUTATION, CauseKind.CONSTANT_VALUE},  # gamma + a swap
    "llama_logging": {CauseKind.OUTPUT_PERMUTATION, CauseKind.OUTPUT_REMOVED},  # a drop + reversal
}


@cache
def _diff(name: str, strip: bool) -> DiffResult:
    a, b = ((HERE / name / f).read_text() for f in ("a.hlo", "b.hlo"))
    if strip:
        a, b = _METADATA.sub("", a), _METADATA.sub("", b)
    return diff_modules(parse_hlo(a, "a.hlo"), parse_hlo(b, "b.hlo"))


def _moved(result: DiffResult, what: str) -> set[tuple[int, int]]:
    return {
        (m.left, m.right) for c in result.causes for m in c.mapping if m.what == what and m.left != m.right
    }


def test_every_scenario_is_generated() -> None:
    assert set(MANIFEST) == set(CAUSES)


@pytest.mark.parametrize("strip", [False, True], ids=["metadata", "structure"])
@pytest.mark.parametrize("name", sorted(CAUSES))
def test_reordering_named_exactly(name: str, strip: bool) -> None:
    entry = MANIFEST[name]
    result = _diff(name, strip)
    kinds = {c.kind for c in result.causes}
    assert kinds == CAUSES[name], [c.summary for c in result.causes]
    # Outputs: exactly the moves torch_xla's tensor ids say, one permutation cause.
    want = {(int(i), j) for i, j in entry["outputs"].items() if j is not None and int(i) != j}
    assert _moved(result, "output") == want
    assert sum(c.kind is CauseKind.OUTPUT_PERMUTATION for c in result.causes) == 1
    # Inputs: a mapping XLA's execution confirms, or none moved where the sequence is the same.
    valid = [{(int(i), j) for i, j in m.items() if int(i) != j} for m in entry.get("inputs", [{}])]
    assert _moved(result, "input") in valid, (sorted(_moved(result, "input")), sorted(valid[0]))
    dropped = sorted(int(i) for i, j in entry["outputs"].items() if j is None)
    removed = sorted(
        int(ch.old.split(":")[0])
        for c in result.causes
        if c.kind is CauseKind.OUTPUT_REMOVED
        for ch in c.changes
        if ch.what == "output" and ch.old
    )
    assert removed == dropped


def test_three_cycle_is_one_cycle_with_no_input_moved() -> None:
    result = _diff("three_cycle", False)
    moved = dict(_moved(result, "output"))
    start = next(iter(moved))
    assert len(moved) == 3 and moved[moved[moved[start]]] == start
    assert not _moved(result, "input")


def test_changed_constant_is_named_beside_the_swap() -> None:
    """gamma 2.5 -> 1.5 is baked twice: the power's exponent and its derivative's (gamma - 1)."""
    (const,) = [c for c in _diff("llama_schedule", False).causes if c.kind is CauseKind.CONSTANT_VALUE]
    changed = {(ch.old, ch.new) for ch in const.changes}
    assert changed == {("f32[] 2.5", "f32[] 1.5"), ("f32[] 1.5", "f32[] 0.5")}, const.changes


_FROZEN_STEM = FIXTURES / "torch_xla/corpus/captures/h23_patchnet_openxla_freeze_stem_callback/hlo"


@pytest.mark.parametrize("strip", [False, True])
def test_frozen_stem_is_two_outputs_removed_and_no_reordering(strip: bool) -> None:
    """held_out_23's real capture: a callback freezes the stem at step 3, and the lazy SGD step G
    lacks the stem's weight and bias (inputs and updates). The f32[12] look-alike updates after
    the stem's bias keep their order: each follows the parameters it reads alone (issue 37), so
    the stem's two updates are removed (outputs 1 and 2) and nothing is permuted."""

    def read(name: str) -> str:
        with lzma.open(_FROZEN_STEM / name, "rt") as f:
            text = f.read()
        return _METADATA.sub("", text) if strip else text

    a = parse_hlo(read("module_0005.SyncTensorsGraph.102.before_optimizations.txt.xz"), "a.hlo")
    b = parse_hlo(read("module_0006.SyncTensorsGraph.92.before_optimizations.txt.xz"), "b.hlo")
    result = diff_modules(a, b)
    assert [c.kind for c in result.causes] == [CauseKind.OUTPUT_REMOVED]
    (removed,) = result.causes
    outputs = sorted(ch.old for ch in removed.changes if ch.what == "output")
    assert outputs == ["1: f32[12,1,4,4]", "2: f32[12]"], outputs
