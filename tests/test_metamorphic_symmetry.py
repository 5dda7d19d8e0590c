"""The metamorphic judge on a module with a symmetry (held_out_36's retrieval step under openxla):
two towers whose weights are read alike (`sum(g)` and `g.T @ x` each) can be paired either way, so
a diff's mapping is right when it is the transformation's up to that symmetry, and wrong otherwise
(tests/metamorphic/check.py, `symmetric`)."""

from __future__ import annotations

from tests.metamorphic.check import _seed, corpus, dead_inputs, judge, output_values, symmetric
from tests.metamorphic.transforms import apply
from xlagraph.diff import diff_modules
from xlagraph.parse.hlo import parse_hlo

LABEL = (
    "torch_xla/corpus/captures/h36_retrieval_openxla_hard_negatives_flag/hlo/"
    "module_0009.SyncTensorsGraph.38.before_optimizations.txt.xz"
)
NAMES = ("swap_updates", "permute_params")
# the towers exchanged: inputs 2<->3 and 4<->5, outputs 1<->2 and 3<->4 of A, after the
# transformation's own mapping (A's inputs 0..5 -> 4, 0, 3, 1, 5, 2; A's outputs 0 <-> 4)
OTHER_IN = {(0, 4), (1, 0), (2, 1), (3, 3), (4, 2), (5, 5)}
OTHER_OUT = {(0, 4), (1, 2), (2, 1), (3, 0), (4, 3)}


def _case() -> tuple[str, str, object]:
    text = dict(corpus(400, 40_000))[LABEL]
    new, exp = apply(text, NAMES, _seed(LABEL, NAMES))
    return text, new, exp


def test_the_towers_exchanged_are_the_same_answer() -> None:
    text, _, exp = _case()
    assert set(exp.params.items()) == {(0, 4), (1, 0), (2, 3), (3, 1), (4, 5), (5, 2)}
    assert symmetric(text, exp, OTHER_IN, OTHER_OUT)


def test_a_mapping_no_symmetry_explains_is_wrong() -> None:
    text, _, exp = _case()
    # the inputs of the other pairing with the outputs of the transformation's: one tower's
    # gradient said to be the other's sum
    assert not symmetric(text, exp, OTHER_IN, set(exp.output_moves().items()))
    # the two embedding tables (p1 + p0 * 1: not read alike) crossed
    crossed = {(0, 0), (1, 4), (2, 3), (3, 1), (4, 5), (5, 2)}
    assert not symmetric(text, exp, crossed, set(exp.output_moves().items()))
    # the transformation's own mapping is judged as it is, not through a symmetry
    assert not symmetric(text, exp, set(exp.params.items()), set(exp.output_moves().items()))


def test_the_engines_pairing_of_the_towers_is_judged_right() -> None:
    """The engine pairs the towers the other way (which of them the swap moved cannot be
    observed); the judge without A's text still holds it to the transformation's pairing."""
    text, new, exp = _case()
    result = diff_modules(parse_hlo(text, "a.hlo"), parse_hlo(new, "b.hlo"))
    moved_in = {(m.left, m.right) for c in result.causes for m in c.mapping if m.what == "input"}
    assert moved_in == OTHER_IN or {p for p in moved_in if p[0] != p[1]} == {
        p for p in OTHER_IN if p[0] != p[1]
    }
    assert judge(result, exp, output_values(text), dead_inputs(new), text) == []
    assert judge(result, exp, output_values(text), dead_inputs(new)) != []


RELAY = (
    "torch_xla/corpus/captures/h40_relay_openxla_aux_losses_grow/hlo/"
    "module_0009.SyncTensorsGraph.145.before_optimizations.txt.xz"
)


def _relay(names: tuple[str, ...]) -> list[str]:
    """held_out_40's backward of three cross-entropy losses, two of them look-alike cones (each
    its own log-softmax input, both scaled by one product): the judge's problems with A's text."""
    text = dict(corpus(400, 40_000))[RELAY]
    new, exp = apply(text, names, _seed(RELAY, names))
    result = diff_modules(parse_hlo(text, "a.hlo"), parse_hlo(new, "b.hlo"))
    return judge(result, exp, output_values(text), dead_inputs(new), text)


def test_an_output_swap_of_look_alike_cones_may_be_named_as_their_inputs_swap() -> None:
    """The transformation swaps the two cones' outputs; the engine names the swap of their inputs,
    the same answer under the cones' symmetry: no output permutation is required of it."""
    assert _relay(("swap_updates", "permute_outputs")) == []


def test_a_changed_constant_may_be_named_at_its_twin_in_the_other_cone() -> None:
    assert _relay(("swap_updates", "constant")) == []


def _judged(label: str, names: tuple[str, ...]) -> tuple[list[str], set[str]]:
    text = dict(corpus(400, 40_000))[label]
    new, exp = apply(text, names, _seed(label, names))
    result = diff_modules(parse_hlo(text, "a.hlo"), parse_hlo(new, "b.hlo"))
    kinds = {str(c.kind) for c in result.causes}
    return judge(result, exp, output_values(text), dead_inputs(new), text), kinds


EXITS = (
    "torch_xla/retrace_optimizer/early_exits_capture/vm-22502/hlo/"
    "module_0009.SyncTensorsGraph.145.before_optimizations.txt.xz"
)


def test_an_input_swap_of_look_alike_cones_may_be_named_as_their_outputs_swap() -> None:
    """The converse of the relay case: the transformation moves the inputs of two look-alike
    backward cones (one product scales both), the engine keeps one input in place and names the
    cones' outputs swapped. Under the cones' symmetry that is the same program: not an invented
    output permutation."""
    problems, kinds = _judged(EXITS, ("permute_params",))
    assert problems == [] and "output_permutation" in kinds


CHAT = (
    "torch_xla/compiled/heldout4_captures/chat_kv_generate/capture/proc/hlo/"
    "module_0000.SyncTensorsGraph.15.before_optimizations.txt.xz"
)


def test_equal_outputs_told_apart_by_their_lines_may_be_named_moved() -> None:
    """Two zero-filled caches compute the same value, so their order is not observable from the
    values; the engine tells them apart by their source lines and names exactly the move the
    transformation made: no invention."""
    problems, kinds = _judged(CHAT, ("permute_outputs", "drop_output"))
    assert problems == [] and "output_permutation" in kinds
