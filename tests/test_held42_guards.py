"""held_out_42's two torch.compile misses (issue 37), on their real torch_xla 2.9 captures, after the
round was scored once. heron: a Python int argument that is topk's k (a size) changes; the retrace's
graphs differ in sizes (and the backward's in shapes the diff cannot name): the number is a size
baked into the ops, with the fixed-size fix, not "pass it as a tensor" (a size cannot be data).
gale: a list passed to the compiled function grows by one item; the retrace's forward returns the
extra item's activations for the backward and no more the graph-break's output: outputs the other
count's items add are that count's, at the line that builds the list, not tensors kept alive. With
three relations zip() no longer breaks the graph, so the step's lazy optimizer graph (J) only hands
other tensors over (the backward's work moved into the retrace's graphs): that count's too. The
list's items are tensors the retrace's graph takes as inputs: `parameter_added` at the line that
builds the list (issue 37's decision; first read as the count's `conditional_work`)."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.causes import CauseKind
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.guards import fix_for

CORPUS = FIXTURES / "torch_xla" / "corpus"
_PREFIX = "fixtures/torch_xla/corpus/"


def _line(name: str, text: str) -> str:
    return script_line(f"{_PREFIX}scripts/{name}.py", text).replace(_PREFIX, "")


def _scored(report, step: int):  # type: ignore[no-untyped-def]
    return [
        (r, [c for c in r.causes if not c.info])
        for r in report.recompiles
        if not r.first_of_program and r.step == step and not r.expected
    ]


def test_a_python_int_that_is_a_size_is_a_size_under_torch_compile() -> None:
    name = "h42_heron_openxla_router_topk_arg"
    report = capture_report(CORPUS / "captures" / name)
    made, read = _line(name, "top_k = 1 if step < WARMUP"), _line(name, "gates.topk(k, dim=-1)")
    scored = _scored(report, 3)
    assert len(scored) == 2  # the forward and the backward of the retrace
    for r, causes in scored:
        assert [c.kind for c in causes] == [CauseKind.ATTRIBUTE], (r.variant, causes)
        assert causes[0].sources[:2] == (made, read)
        assert causes[0].hint == fix("attribute.size")


def test_outputs_a_grown_lists_item_adds_are_that_lists_length() -> None:
    name = "h42_gale_openxla_new_relation_type"
    report = capture_report(CORPUS / "captures" / name)
    built = _line(name, "adjs = [rels[name].to(device) for name in known]")
    r, causes = _scored(report, 3)[0]
    assert [c.kind for c in causes] == [CauseKind.PARAMETER_ADDED], (r.variant, causes)
    assert causes[0].sources[0] == built
    assert causes[0].hint == fix_for("sequence_length")


def test_the_lazy_graph_a_retrace_without_the_break_hands_over_is_that_lists_length() -> None:
    """Every graph of the retrace's step, the lazy optimizer's (J) too: no output removed."""
    name = "h42_gale_openxla_new_relation_type"
    report = capture_report(CORPUS / "captures" / name)
    built = _line(name, "adjs = [rels[name].to(device) for name in known]")
    zipped = _line(name, "for adj, lin in zip(adjs, self.rel")
    scored = _scored(report, 3)
    assert [r.variant for r, _ in scored] == ["I", "J"]
    for r, causes in scored:
        assert [c.kind for c in causes] == [CauseKind.PARAMETER_ADDED], (r.variant, causes)
        assert causes[0].sources[0] == built
        assert causes[0].hint == fix_for("sequence_length")
    assert zipped in scored[1][1][0].summary  # the break the retrace no longer hits
