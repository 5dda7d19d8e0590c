"""The recognizer layer (xlagraph.diagnose.recognizers): one shared contract, a stated order, and
on real dumps the pattern each one names, with a fix that applies to it. Real fixtures only:
fixtures/torch_xla (torch_xla 2.9 scenarios), fixtures/jax (JAX pairs), tests/data."""

from __future__ import annotations

import lzma
import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose import ORDER, CauseKind, Context, Evidence, Recognized, Recognizer, recognize
from xlagraph.diagnose.evidence import IMPLICIT_TRIGGERS, NO_CONTEXT
from xlagraph.diagnose.recognizers import FINAL
from xlagraph.diff import diff_modules
from xlagraph.parse.hlo import parse_hlo
from xlagraph.parse.sources import load_module

TORCH = FIXTURES / "torch_xla"
RECOGNIZERS = Path(__file__).resolve().parent.parent / "xlagraph" / "diagnose" / "recognizers"


def _pair(folder: Path, context: Context = NO_CONTEXT):  # type: ignore[no-untyped-def]
    return diff_modules(load_module(str(folder / "a.hlo")), load_module(str(folder / "b.hlo")), context)


# --- the contract --------------------------------------------------------------------------------


def test_one_module_per_recognizer_in_a_stated_order() -> None:
    names = [r.name for r in (*ORDER, *FINAL)]
    assert len(set(names)) == len(names)
    assert all(isinstance(r, Recognizer) for r in (*ORDER, *FINAL))
    for name in names:
        assert (RECOGNIZERS / f"{name}.py").is_file(), name
    assert ORDER[-1].name == "unknown" and FINAL[-1].name == "grouping"


@pytest.mark.parametrize("scenario", ["special_scalar", "item_mid_step", "fsdp_bucket", "kept_alive"])
def test_every_recognizer_keeps_to_the_contract_on_real_raw_differences(scenario: str) -> None:
    """Each returns `Recognized` whose consumed indices are within what it was given."""
    result = _pair(TORCH / scenario)
    evidence = Evidence(result.left, result.right, Context())
    pending = result.causes
    for recognizer in (*ORDER, *FINAL):
        found = recognizer.recognize(evidence, pending)
        assert isinstance(found, Recognized)
        assert all(0 <= i < len(pending) for i in found.consumed)
    assert recognize(evidence, ()) == ()


# --- patterns on real torch_xla dumps ------------------------------------------------------------


def test_special_scalar_is_one_constant_value_cause_with_the_zero_one_fix() -> None:
    (cause,) = _pair(TORCH / "special_scalar").causes
    assert cause.kind is CauseKind.CONSTANT_VALUE and cause.count == 2
    assert "0 and 1" in cause.hint and "drop_last" not in cause.hint
    assert any(s.endswith("special_scalar.py:30") for s in cause.sources)


def test_minus_one_is_a_special_scalar_too() -> None:
    # torch_xla bakes |x| == 1 as well: SGD's add_(grad, alpha=-lr) at an lr of exactly 1.0 reads
    # constant(-1) where other steps read a scalar input
    from xlagraph.diagnose.recognizers.special_scalar import _special

    assert _special("-1") and _special("1") and _special("0") and _special("-0")
    assert not _special("-0.5") and not _special("2") and not _special("x")


def test_ragged_batch_hint_is_about_the_batch_not_sequences() -> None:
    (cause,) = _pair(TORCH / "ragged_batch").causes
    assert cause.kind is CauseKind.PARAMETER_SHAPE
    assert "drop_last" in cause.hint and "sequence" not in cause.hint


def test_python_int_slice_is_an_attribute_with_the_indexing_fix() -> None:
    (cause,) = _pair(TORCH / "slice_int").causes
    assert cause.kind is CauseKind.ATTRIBUTE and "index" in cause.summary
    assert "index_select" in cause.hint


def test_bucketing_keeps_the_bucketing_hint() -> None:
    (cause,) = _pair(TORCH / "fsdp_bucket").causes
    assert cause.kind is CauseKind.COLLECTIVE and "bucketing" in cause.hint


def test_replica_group_change_is_parallelism_not_bucketing() -> None:
    (cause,) = _pair(FIXTURES / "jax" / "pairs" / "collective_regroup").causes
    assert cause.kind is CauseKind.COLLECTIVE
    assert "parallel layout" in cause.hint and "bucketing" not in cause.hint


def test_sharding_change_has_no_python_int_hint() -> None:
    pairing = FIXTURES / "jax" / "pairing"
    result = diff_modules(load_module(str(pairing / "tp_a.hlo")), load_module(str(pairing / "tp_b.hlo")))
    (cause,) = result.causes
    assert cause.kind is CauseKind.SHARDING and "Python int" not in cause.hint


def test_extra_output_alone_stays_output_added() -> None:
    (cause,) = _pair(TORCH / "kept_alive").causes
    assert cause.kind is CauseKind.OUTPUT_ADDED


def test_graph_cut_short_without_capture_is_graph_break_citing_no_library_line() -> None:
    (cause,) = _pair(TORCH / "item_mid_step").causes
    assert cause.kind is CauseKind.GRAPH_BREAK
    assert cause.sources == ()  # the differing ops' lines are not where the step was cut
    assert "XLAGRAPH_CAPTURE" in cause.summary


@pytest.mark.parametrize("trigger", sorted(IMPLICIT_TRIGGERS))
def test_graph_break_cites_the_implicit_sync_line_the_capture_gives(trigger: str) -> None:
    line = str(TORCH / "scenarios" / "item_mid_step.py") + ":30"
    (cause,) = _pair(TORCH / "item_mid_step", Context(trigger=trigger, call_site=line, step=2)).causes
    assert cause.kind is CauseKind.GRAPH_BREAK and cause.sources == (line,)
    assert "add_step_closure" in cause.hint


def test_explicit_sync_is_no_graph_break_when_the_graphs_do_not_say_so() -> None:
    (cause,) = _pair(TORCH / "kept_alive", Context(trigger="sync", step=1)).causes
    assert cause.kind is CauseKind.OUTPUT_ADDED


def test_state_init_needs_buffers_not_scalars() -> None:
    """A scalar input that feeds an extra output is a kept-alive tensor, not optimizer state."""
    train = Path(__file__).resolve().parent / "data" / "train.hlo.txt"
    result = diff_modules(
        load_module(f"{train}#2"), load_module(f"{train}#3"), Context(step=1, first_graph=True)
    )
    assert [c.kind for c in result.causes] == [CauseKind.OUTPUT_ADDED]


def test_dict_order_on_the_warm_up_step_is_its_own_cause_beside_state_init() -> None:
    # fixtures/torch_xla/dict_stats: the statistics dict is filled in reversed order on odd steps,
    # so step 1 has both the optimizer's new buffers and the reordered statistics. The reordering
    # is named (with the regions computed in the new order), not folded into the warm-up and not
    # left as an unknown structure.
    save = FIXTURES / "torch_xla" / "dict_stats" / "save_hlo.txt"
    result = diff_modules(load_module(f"{save}#0"), load_module(f"{save}#1"))
    kinds = sorted(str(c.kind) for c in result.causes)
    assert kinds == ["output_permutation", "state_init"], kinds


def test_inputs_and_outputs_in_another_order_are_one_cause() -> None:
    """fixtures/torch_xla/update_order: parameters updated backwards on odd steps reorder both the
    inputs and the outputs; one root reason, one cause, which carries both mappings."""
    folder = FIXTURES / "torch_xla" / "update_order" / "xla_dump"
    a, b = sorted(folder.glob("module_000[12].*before_optimizations.txt"))
    (cause,) = diff_modules(load_module(str(a)), load_module(str(b))).causes
    assert cause.kind is CauseKind.OUTPUT_PERMUTATION
    assert "inputs come in another order too" in cause.summary
    moved_inputs = [m for m in cause.mapping if m.left != m.right and m.left_name.startswith("p")]
    assert moved_inputs, cause.mapping


def test_a_mask_by_another_name_and_padding_to_the_longest_are_found(tmp_path: Path) -> None:
    """Lines users write: `x[real]` with `real = labels != -100` above, and a collate function
    that pads each batch to its longest item."""
    from xlagraph.diagnose.recognizers.dynamic_shape import _mask_variable
    from xlagraph.diagnose.recognizers.input_shape import _PAD_TO_LONGEST

    script = tmp_path / "train.py"
    script.write_text(
        "def acc(logits, labels):\n"
        "    real = labels != -100\n"
        "    preds = logits.argmax(-1)[real]\n"
        "    kept = labels.clone()\n"
        "    return preds, logits[kept]\n"
    )
    assert _mask_variable(f"{script}:3")
    assert not _mask_variable(f"{script}:5")  # indexed by a tensor that is not a mask
    assert _PAD_TO_LONGEST.search("    longest = max(len(ids) for ids, _ in batch)")
    assert _PAD_TO_LONGEST.search('    enc = tok(texts, padding="longest", return_tensors="pt")')
    assert not _PAD_TO_LONGEST.search('    enc = tok(texts, padding="max_length", max_length=64)')


def test_a_tensor_kept_on_the_first_step_is_no_pending_initialisation() -> None:
    """fixtures/torch_xla/kept_alive keeps a gradient norm on even steps: step 1 returns it no
    more, and that is the bug, not ops pending since the model was built (the norm is computed
    from the weights both graphs read)."""
    save = FIXTURES / "torch_xla" / "kept_alive" / "save_hlo.txt"
    result = diff_modules(
        load_module(f"{save}#0"), load_module(f"{save}#1"), Context(step=1, first_graph=True)
    )
    kinds = {(c.kind, c.info) for c in result.causes}
    assert (CauseKind.OUTPUT_REMOVED, False) in kinds, kinds


def test_a_batch_placed_another_way_every_k_steps_is_found_for_a_sharding_cause(tmp_path: Path) -> None:
    """A sharding that changes on some steps with no line of the user's in the graph: the loop's
    `if step % k` block that puts a batch on the device another way is the line to show."""
    from xlagraph.diagnose.recognizers._periodic import periodic_in_loop
    from xlagraph.diagnose.recognizers._source import source_text
    from xlagraph.diagnose.recognizers.periodic_site import _PLACES

    script = tmp_path / "train.py"
    script.write_text(
        "def main(model, hard, fresh, device):\n"
        "    for step in range(8):\n"
        "        if step % 3 == 2:\n"
        "            x = hard.to(device)\n"
        "            print('replay')\n"
        "        else:\n"
        "            x = fresh()\n"
        "        model(x).sum().backward()\n"
        "        torch_xla.sync()\n"
    )
    blocks = periodic_in_loop(f"{script}:9")
    assert [b for b in blocks if _PLACES.search(source_text(b))] == [f"{script}:4"]


def test_a_check_nested_under_a_condition_read_from_a_tensor_gives_way_to_it(tmp_path: Path) -> None:
    """`if p.grad is not None:` in a loop over the weights, inside `if total.item() > max_norm:`:
    the tensor's condition decides which code the step traces, not the check nested in it."""
    from xlagraph.diagnose.recognizers._periodic import synced_if

    script = tmp_path / "train.py"
    script.write_text(
        "def clip(params, total, max_norm):\n"
        "    if total.item() > max_norm:\n"
        "        for p in params:\n"
        "            if p.grad is not None:\n"
        "                p.grad.mul_(0.5)\n"
        "    if max_norm > 1:\n"
        "        total.mul_(2)\n"
    )
    assert synced_if(f"{script}:4") == f"{script}:2"
    assert synced_if(f"{script}:5") == f"{script}:2"
    assert synced_if(f"{script}:7") == ""  # a condition on a Python number: no tensor read


def test_the_order_of_tensors_updated_in_hooks_or_called_in_a_loop_is_found(tmp_path: Path) -> None:
    """Statistics a forward hook updates come out in the hooks' registration order; those each
    meter's own `update` method makes, in the order of the loop that calls the meters."""
    from xlagraph.diagnose.recognizers._permutation_site import _calling_loop
    from xlagraph.diagnose.recognizers._user_flow import hook_registrations as _hook_registrations

    script = tmp_path / "train.py"
    script.write_text(
        "class Probe:\n"
        "    def _hook(self, name):\n"
        "        def hook(mod, inputs, out):\n"
        "            self.stats[name] = out.mean()\n"
        "        return hook\n"
        "\n"
        "    def arm(self, name):\n"
        "        self.handles[name] = self.module.register_forward_hook(self._hook(name))\n"
        "\n"
        "\n"
        "class Acc:\n"
        "    def update(self, out):\n"
        "        self.n = self.n + out.sum()\n"
        "\n"
        "\n"
        "class Ema:\n"
        "    def update(self, out):\n"
        "        self.v = 0.9 * self.v + out.mean()\n"
        "\n"
        "\n"
        "def track(meters, out):\n"
        "    for meter in meters.values():\n"
        "        meter.update(out)\n"
    )
    assert _hook_registrations([f"{script}:4"]) == [f"{script}:8"]
    assert _hook_registrations([f"{script}:13"]) == []
    assert _calling_loop([f"{script}:13", f"{script}:18"], ()) == [f"{script}:22"]
    assert _calling_loop([f"{script}:13"], ()) == []  # one function called from a loop: not enough


_NONZERO = "corpus/captures/tu_hard_example_nonzero/hlo/"  # torch.nonzero(labels == 1), 1-D mask
_BOOLMASK = "corpus/captures/ho_encoder_mlm_boolmask/hlo/"  # logits[keep], keep a [4, 10] mask
_IDS = "compiled/heldout5_captures/request_batch_generate/capture/proc/hlo/"  # nxt: a column of ids


def _bare(rel: str):  # type: ignore[no-untyped-def]
    """A real module with its metadata cut: no frame or line tells what made an input."""
    path = next((TORCH / rel).parent.glob(Path(rel).name + ".*"))
    return parse_hlo(re.sub(r", metadata=\{[^}]*\}", "", lzma.decompress(path.read_bytes()).decode()))


@pytest.mark.parametrize(
    ("a", "b", "kind"),
    [
        (_NONZERO + "module_0001", _NONZERO + "module_0002", "dynamic_shape"),  # s64[3,1] -> [2,1]
        (_BOOLMASK + "module_0002", _BOOLMASK + "module_0003", "dynamic_shape"),  # s64[6,2] -> [5,2]
        (_IDS + "module_0005", _IDS + "module_0009", "parameter_shape"),  # s64[3,1] -> [2,1]
    ],
)
def test_nonzero_coordinates_are_told_from_a_column_of_ids_by_their_use(a: str, b: str, kind: str) -> None:
    """An integer input s64[n, k] whose n changed, in graphs with no lines: nonzero's coordinates
    are the start indices of a gather with k components (one index_select column, or both of a
    2-D mask's); a batch's column of token ids that the graph slices and returns is data, and its
    new batch size a parameter shape (the last pair: issue 37's metamorphic cases on its module)."""
    result = diff_modules(_bare(a), _bare(b))
    assert [str(c.kind) for c in result.causes] == [kind]


# --- rules read a cause's case, never its words -------------------------------------------------


def _tp_opt():  # type: ignore[no-untyped-def]
    """8 all-reduces over 2 ranks in A, over 4 in B (real torch_xla dumps)."""
    parallel = TORCH / "parallel"
    left, right = (load_module(str(parallel / f"tp_opt_{side}.hlo")) for side in "ab")
    return diff_modules(left, right)


def test_replica_groups_changed_is_told_by_its_case_not_its_words() -> None:
    """`parallelism` finds collectives over other replica groups by the case the comparison sets
    (`collectives.GROUPS_CHANGED`), which a rewording cannot lose; a cause that only says the
    words is not it, and a change past the few the summary lists still is."""
    from xlagraph.diagnose.causes import HINTS, Cause
    from xlagraph.diagnose.collectives import GROUPS_CHANGED, Collective, summarize
    from xlagraph.diagnose.recognizers.parallelism import RECOGNIZER

    result = _tp_opt()
    assert "(replica groups changed)" in result.causes[0].summary
    evidence = Evidence(result.left, result.right, Context())
    words = "all-reduce all-reduce.156 replica groups {{0,1}} -> {{0,1,2,3}}"
    said = Cause(CauseKind.COLLECTIVE, words, HINTS[CauseKind.COLLECTIVE])
    assert RECOGNIZER.recognize(evidence, (said,)).causes == ()
    reworded = Cause(CauseKind.COLLECTIVE, "each all-reduce spans 4 ranks", said.hint, case=GROUPS_CHANGED)
    (found,) = RECOGNIZER.recognize(evidence, (reworded,)).causes
    assert found.summary.startswith("the parallel layout changed (replica groups changed)")

    def op(i: int, groups: str) -> Collective:
        return Collective(f"all-reduce.{i}", "all-reduce", (f"f32[{i}]",), f"f32[{i}]", groups, "")

    a = [op(i, "{{0,1}}") for i in range(1, 7)]
    wider = [o._replace(operands=("f32[9]",), shape="f32[9]") for o in a[:5]]  # the 4 shown, and 1 more
    b = [*wider, op(6, "{{0,1,2,3}}")]
    summary, case = summarize(a, b)
    assert "replica groups" not in summary and "and 2 more" in summary
    assert case == GROUPS_CHANGED
    assert summarize(a, b[:5] + a[5:])[1] == ""


def test_an_input_in_another_layout_is_told_by_its_case_not_its_words() -> None:
    """`layout` finds an entry input handed in another layout by the case `inputs` sets
    (`causes.INPUT_LAYOUT`), not by the word `input` in its summary."""
    from xlagraph.diagnose.causes import HINTS, INPUT_LAYOUT, Cause
    from xlagraph.diagnose.recognizers.layout import RECOGNIZER

    result = _pair(FIXTURES / "jax" / "wild3" / "compiled_input_layout_column_major")
    (real,) = result.causes
    assert real.case == INPUT_LAYOUT and real.summary.endswith("(XLA re-lays it out with a copy)")
    evidence = Evidence(result.left, result.right, Context())
    copy = Cause(CauseKind.STRUCTURE, "a copy only B runs", HINTS[CauseKind.STRUCTURE])
    words = "1 input(s) have the same shape in another layout or memory space: input 0"
    said = Cause(CauseKind.LAYOUT, words, HINTS[CauseKind.LAYOUT])
    alone = RECOGNIZER.recognize(evidence, (said, copy))
    assert alone.causes == () and alone.consumed == frozenset({0})
    reworded = Cause(CauseKind.LAYOUT, "argument 0 arrives column-major", said.hint, case=INPUT_LAYOUT)
    found = RECOGNIZER.recognize(evidence, (reworded, copy))
    assert found.consumed == frozenset({0, 1})
    assert found.causes[0].summary == "argument 0 arrives column-major (XLA re-lays it out with a copy)"
