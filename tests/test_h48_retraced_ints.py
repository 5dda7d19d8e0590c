"""held_out_48's torch.compile(openxla) misses (issue 37), end to end on real captures: a Python
int that dynamo guards (a module's attribute, a global) read as sizes, and a list of inputs that
grows. Each rule is checked on the held-out capture it was fixed on (scored once, so readable) and
on one more capture of the same pattern with another model (fixtures/torch_xla/compiled)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.guards import fix_for
from xlagraph.report.model import RunReport

CORPUS = FIXTURES / "torch_xla" / "corpus" / "captures"
COMPILED = FIXTURES / "torch_xla" / "compiled"
GARNET = "h48_garnet_openxla_head_pruning"
QUARTZ = "h48_quartz_openxla_hardneg_global_k"
COBALT = "h48_cobalt_openxla_scale_list"


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


def _grown_list(report: RunReport, step: int, built: str) -> None:
    """The first graph of the retrace for a list that grew names the added inputs, cited first
    where the list is built, with the list's fix: not the loop's other count."""
    live, r = _on_step(report, step)[0]
    assert r.dynamo
    assert [str(c.kind) for c in live] == ["parameter_added"]
    assert live[0].sources[0] == built
    assert live[0].hint == fix_for("sequence_length")


def test_a_list_of_inputs_that_grows_names_the_added_inputs_where_it_is_built() -> None:
    """cobalt: `feats = backbone(x)[:active_scales]` (:47) passes 3 maps from step 6 on; dynamo's
    `len(feats) == 2` fails at the head's `for f in feats` (:31), and the head takes one input
    more. It read as `conditional_work` (the generator's other trip count)."""
    _grown_list(capture_report(CORPUS / COBALT), 6, f"scripts/{COBALT}.py:47")


def test_a_list_of_inputs_of_another_model_too() -> None:
    """views_grow: a consistency loss over a list of views that gains a third view at step 3."""
    script = "fixtures/torch_xla/compiled/scenarios/views_grow.py"
    _grown_list(
        capture_report(COMPILED / "captures" / "views_grow" / "capture"), 3, script_line(script, "views = [")
    )


def test_a_list_that_shrinks_stays_the_loops_other_count() -> None:
    """list_length (a task left out of the list): inputs fewer, no input more, so not a grown list:
    still the generator's trip count, as tests/test_dynamo_h35.py holds."""
    first = [
        r
        for r in capture_report(COMPILED / "captures" / "list_length" / "capture").recompiles
        if not r.expected
    ]
    assert [str(c.kind) for c in first[0].causes if not c.info] == ["conditional_work"]
