"""Reorderings on real torch_xla 2.9 captures (issue 19, part 1): fixtures/torch_xla/reorder,
made by its generate.py under XLAGRAPH_CAPTURE on the CPU device.

* update_order_state: parameter updates run in reversed order on odd steps, beside a running
  mean and a counter created before the loop (first materialized at step 0) and momentum
  buffers made on the first step;
* dict_order_stats: running statistics in a dict rebuilt each step in a key order that flips
  (inputs f32[4] and f32[16] trade places), beside zeros made before the loop and SGD momentum
  state made on the first step;
* randperm_blocks: a model's forward applies its blocks in an order it draws each step.

The report must name the reordering with its exact mapping, and nothing invented (no shape
change, no output listed as removed)."""

from __future__ import annotations

from functools import cache

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose import CauseKind
from xlagraph.report import build_report, load_runs
from xlagraph.report.model import Recompile

REORDER = FIXTURES / "torch_xla" / "reorder"
_ORDER = {CauseKind.OUTPUT_PERMUTATION, CauseKind.PARAMETER_PERMUTATION}
_INVENTED = {CauseKind.PARAMETER_SHAPE, CauseKind.OUTPUT_REMOVED, CauseKind.OUTPUT_ADDED, CauseKind.STRUCTURE}


@cache
def _recompiles(name: str) -> tuple[Recompile, ...]:
    folder = REORDER / f"{name}_capture"
    if not folder.is_dir():
        pytest.fail(f"missing {folder}: run fixtures/torch_xla/reorder/generate.py")
    (log,) = load_runs(str(folder))
    return build_report(log).recompiles


def _moved(r: Recompile, what: str) -> set[tuple[int, int]]:
    return {(m.left, m.right) for c in r.causes for m in c.mapping if m.what == what and m.left != m.right}


def test_both_captures_alternate_between_two_graphs() -> None:
    for name in ("update_order_state", "dict_order_stats"):  # (randperm_blocks: below)
        assert [r.step for r in _recompiles(name)] == [1, 2], name


def test_reversed_update_order_is_named_with_its_mapping() -> None:
    r = _recompiles("update_order_state")[1]  # step 2 (forward) against step 1 (reversed)
    assert {c.kind for c in r.causes} == {CauseKind.OUTPUT_PERMUTATION}, [c.summary for c in r.causes]
    # Outputs 4..11 are (weight, momentum) pairs of the four parameters: the pairs come in reverse.
    assert _moved(r, "output") == {(4, 10), (5, 11), (6, 8), (7, 9), (8, 6), (9, 7), (10, 4), (11, 5)}
    assert len(_moved(r, "input")) == 4


def test_flipped_dict_order_is_named_not_a_shape_change() -> None:
    r = _recompiles("dict_order_stats")[1]  # step 2 against step 1: the two statistics trade places
    assert {c.kind for c in r.causes} == {CauseKind.OUTPUT_PERMUTATION}, [c.summary for c in r.causes]
    assert _moved(r, "output") == {(21, 22), (22, 21)}
    assert _moved(r, "input") == {(13, 14), (14, 13)}
    for other in _recompiles("dict_order_stats"):
        assert CauseKind.PARAMETER_SHAPE not in {c.kind for c in other.causes}, other.step


def test_reversal_at_the_first_recompile_is_named_beside_the_warm_up() -> None:
    r = _recompiles("update_order_state")[0]
    kinds = {c.kind for c in r.causes}
    assert kinds & _ORDER and CauseKind.STATE_INIT in kinds and not kinds & _INVENTED, kinds
    # What is said to have moved is part of the reversal (the (buffer, weight) pairs in reverse).
    moved = _moved(r, "output")
    assert moved and moved <= {(4, 10), (5, 11), (6, 8), (7, 9), (8, 6), (9, 7), (10, 4), (11, 5)}, moved
    # The momentum buffers the script made at step 0 and the tensors made before the loop are
    # the warm-up, with nothing left as conditional work or structure.
    assert CauseKind.CONDITIONAL_WORK not in kinds, [c.summary for c in r.causes]


def test_flipped_dict_order_at_the_first_recompile_is_named_beside_the_warm_up() -> None:
    r = _recompiles("dict_order_stats")[0]
    kinds = {c.kind for c in r.causes}
    assert kinds & _ORDER and CauseKind.STATE_INIT in kinds, kinds
    assert not kinds & _INVENTED, [c.summary for c in r.causes]
    # Only the two statistics trade places: the momentum buffers made on this step shift nothing.
    assert _moved(r, "output") == {(21, 22), (22, 21)}
    # The zeros made before the loop (computed by the first graph) are named as warm-up, at their line.
    assert any(
        c.kind is CauseKind.STATE_INIT and any(s.endswith("dict_order_stats.py:16") for s in c.sources)
        for c in r.causes
    ), [(c.kind, c.sources) for c in r.causes]


def test_an_order_drawn_in_the_models_forward_is_cited() -> None:
    """randperm_blocks: a model applies its blocks in an order its own forward draws each step.
    The tensors the step creates follow that order; the line that draws it is in code the graph
    ran, not near the optimizer step the permuted outputs come from, and it is cited first."""
    recompiles = _recompiles("randperm_blocks")
    assert [r.step for r in recompiles] == [1, 2, 3, 4]
    text = (REORDER / "randperm_blocks.py").read_text(encoding="utf-8").splitlines()
    cause_line = next(n for n, line in enumerate(text, 1) if "# CAUSE" in line)
    for r in recompiles:
        assert {c.kind for c in r.causes} == {CauseKind.OUTPUT_PERMUTATION}, [c.summary for c in r.causes]
        assert r.lines[0].endswith(f"randperm_blocks.py:{cause_line}"), r.lines
