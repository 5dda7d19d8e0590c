"""held_out_24's misses, end to end on its real captures (tuned on after its first blind run,
recorded in docs/accuracy.md)."""

from __future__ import annotations

from pathlib import Path

from tests.test_recognizers_capture import _recompiles


def _numbers(lines: tuple[str, ...]) -> list[int]:
    return [int(x.rsplit(":", 1)[1]) for x in lines]


def test_an_early_exit_on_a_tensor_s_truth_value_is_named_at_its_if(tmp_path: Path) -> None:
    """`if h.abs().max() > self.limit: break` among the blocks reads the tensor without `.item()`:
    the capture saw the graphs cut by implicit syncs at that line (:35), which makes it a read on
    the host. The batch in millivolts at step 3 stops after one block: the blocks skipped, their
    weights and updates follow from the `if`, one cause, no `structure`."""
    name = "h24_denoiser_lazy_overflow_break"
    (r,) = _recompiles(name, tmp_path)
    (cause,) = r.causes
    assert str(cause.kind) == "conditional_work"
    assert _numbers(cause.sources)[0] == 35


def test_a_zero_passed_to_a_compiled_step_is_followed_through_the_wrapper(tmp_path: Path) -> None:
    """`step_fn = torch_xla.compile(train_step)` is called with `ortho_weight(step, ...)`, which
    reaches exactly 0.0 at step 3: the value is computed at the helper's return (:27) and passed
    at the call (:53), cited before the use in the step (:45)."""
    name = "h24_autoenc_compiled_ortho_to_zero"
    (r,) = _recompiles(name, tmp_path)
    (cause,) = r.causes
    assert str(cause.kind) == "constant_value"
    assert _numbers(cause.sources)[:3] == [27, 53, 45]


def test_a_loop_over_what_a_method_returns_is_ordered_by_its_return(tmp_path: Path) -> None:
    """`for m in self.ordered_monitors(): m.update(...)` updates the monitors' state in the order
    the method returns, `sorted(..., key=lambda m: (not m.ready(self.step), m.name))` (:54): a
    monitor becoming ready at step 4 moves first. The loop (:63), then that return."""
    name = "h24_tabular_eager_monitor_ready_sort"
    (r,) = _recompiles(name, tmp_path)
    (cause,) = r.causes
    assert str(cause.kind) == "output_permutation"
    assert _numbers(cause.sources)[:2] == [63, 54]


def test_rows_dropped_before_a_compiled_model_are_cited_where_the_helper_drops_them(tmp_path: Path) -> None:
    """torch.compile(backend="openxla") retraces `forward` when `ids` shrinks from 8 rows to 5
    (unlabelled rows dropped on the host). The guard names the argument; its value was moved to
    the device (:63) after `labelled_rows` (:62), whose `return ids[keep], labels[keep]` (:51)
    made its size: cited at the retrace's XLA graphs."""
    name = "h24_textcnn_openxla_unlabeled_rows_dropped"
    recompiles = [r for r in _recompiles(name, tmp_path) if r.step == 3]
    assert recompiles and all(r.kinds == ("parameter_shape",) for r in recompiles)
    assert all(r.attribution[0].lines == (f"scripts/{name}.py:51",) for r in recompiles)


def test_the_openxla_bridge_s_input_graph_after_its_warm_up_is_warm_up(tmp_path: Path) -> None:
    """A clean openxla loop: at step 0 the bridge's first compile synced all pending work (a graph
    of its own, B); from step 1 on it syncs only the compiled graph's inputs (E), a graph first
    compiled at another library line. E replaces B in every later step: torch.compile's warm-up
    (`state_init.bridge_sync`), not work synced at a point of its own."""
    name = "h24_housing_openxla_droplast_clean"
    recompiles = _recompiles(name, tmp_path)
    assert [r.step for r in recompiles] == [1, 1]
    assert all(c.info for r in recompiles for c in r.causes)
    assert {c.fix_id for r in recompiles for c in r.causes} == {"state_init.bridge_sync"}
