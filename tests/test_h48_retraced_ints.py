"""held_out_48's torch.compile(openxla) misses (issue 37), end to end on real captures: a Python
int that dynamo guards (a module's attribute, a global) read as sizes. Each rule is checked on the
held-out capture it was fixed on (scored once, so readable) and on one more capture of the same
pattern with another model (fixtures/torch_xla/compiled)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.report.model import RunReport

CORPUS = FIXTURES / "torch_xla" / "corpus" / "captures"
COMPILED = FIXTURES / "torch_xla" / "compiled"
GARNET = "h48_garnet_openxla_head_pruning"
QUARTZ = "h48_quartz_openxla_hardneg_global_k"


def _on_step(report: RunReport, step: int) -> list:
    """The recompiles to fix on `step`, each as (its live causes, the recompile)."""
    return [
        ([c for c in r.causes if not c.info], r)
        for r in report.recompiles
        if not r.expected and r.step == step
    ]


def _said_as_sizes(report: RunReport, step: int, made: str, read: str) -> None:
    """Every graph dynamo's retrace compiled on `step` (the forward, the bridge's backward, the
    step's lazy graph) is one `attribute` of sizes, cited where the int is set, then where it is
    read, with the fixed-size fix: not a sequence length, not inputs added or removed."""
    retraced = _on_step(report, step)
    assert len(retraced) == 3
    for live, _ in retraced:
        assert [(str(c.kind), c.fix_id) for c in live] == [("attribute", "attribute.size")]
        assert list(live[0].sources[:2]) == [made, read]


def test_a_module_int_attribute_read_as_a_reshape_size_is_the_attribute() -> None:
    """garnet: `model.attn.heads = heads_for(step)` (:50) drops 4 -> 2 at step 5; dynamo's guard on
    `self.heads` (read at :20) fails and the attention is traced with other reshapes. It read as
    `parameter_shape` (a sequence length, "no input to carry it") and its lazy graph as
    `parameter_added` (9 inputs more against the first step's graph, before the momentum)."""
    script = f"scripts/{GARNET}.py"
    _said_as_sizes(capture_report(CORPUS / GARNET), 5, f"{script}:50", f"{script}:20")


def test_a_module_int_attribute_of_another_model_too() -> None:
    """attr_chunks: a token mixer's `self.chunks` (a reshape's size) set 4 -> 2 at step 4."""
    script = "fixtures/torch_xla/compiled/scenarios/attr_chunks.py"
    _said_as_sizes(
        capture_report(COMPILED / "captures" / "attr_chunks" / "capture"),
        4,
        script_line(script, "model.mixer.chunks = "),
        script_line(script, "pooled = x.reshape("),
    )


def test_a_global_k_says_the_same_change_in_its_later_graphs() -> None:
    """quartz: `HARD_K = 4` (:43) at step 6, read by topk (:28). Its first graph was right; the
    bridge's backward read as `parameter_shape` and the lazy graph as `parameter_removed` beside a
    `conditional_work`: the same change, one cause in each."""
    script = f"scripts/{QUARTZ}.py"
    _said_as_sizes(capture_report(CORPUS / QUARTZ), 6, f"{script}:43", f"{script}:28")


def test_a_global_k_of_another_model_too() -> None:
    """global_topm: a keyword spotter's `TOP_M` (topk's k) lowered 6 -> 3 at step 4."""
    script = "fixtures/torch_xla/compiled/scenarios/global_topm.py"
    _said_as_sizes(
        capture_report(COMPILED / "captures" / "global_topm" / "capture"),
        4,
        script_line(script, "TOP_M = 3"),
        script_line(script, "scores.topk(TOP_M"),
    )


def test_a_list_that_shrinks_stays_the_loops_other_count() -> None:
    """list_length (a task left out of the list): inputs fewer, no input more, so not a grown list
    (no `parameter_shape`): the list of tensors shrunk, `parameter_removed` at the line that makes
    it, as tests/test_dynamo_h35.py holds (issue 37's decision; first read as the generator's trip
    count, `conditional_work`)."""
    first = [
        r
        for r in capture_report(COMPILED / "captures" / "list_length" / "capture").recompiles
        if not r.expected
    ]
    assert [str(c.kind) for c in first[0].causes if not c.info] == ["parameter_removed"]


def test_a_flag_global_that_dynamo_guards_is_no_size() -> None:
    """held_out_36's retrieval: `if HARD_NEGATIVES:` (a bool global, `== False`) picks the hard
    negatives' topk, whose shapes its graphs show: a flag picks code, it is no int read as sizes."""
    report = capture_report(CORPUS / "h36_retrieval_openxla_hard_negatives_flag")
    kinds = {str(c.kind) for r in report.recompiles if r.dynamo for c in r.causes if not c.info}
    assert "attribute" not in kinds and "conditional_work" in kinds
