"""Two misses of held_out_37 (issue 37), on its real torch_xla 2.9 captures: what a function
`torch_xla.compile` traces returns on some calls only.

* h37_news_compiled_twin_heads: the step adds the region head's logits to the dict it returns under
  `if log_region:`; the logits are computed on every step (the loss needs them), so the only
  difference is an output: named `output_added` at the line that adds it, its `if` and the call, not
  where the host reads it after the call, with the fix of returning the same outputs every call;
* h37_gait_compiled_meters_swap_probs: the same under `if want_probs: return loss, probs`, whose
  softmax reads nothing the other graph lacks (not `conditional_work`: no validation batch scored),
  beside two meters updated in an order an `if peak_first:` / `else:` picks (its branches run the
  same statements in another order): that `if` is cited first for the permutation."""

from __future__ import annotations

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report, script_line
from xlagraph.diagnose.recognizers._deciding_loop import branch_order
from xlagraph.diagnose.recognizers._traced_returns import returned_under_if

CORPUS = FIXTURES / "torch_xla" / "corpus"
_PREFIX = "fixtures/torch_xla/corpus/"


def _line(name: str, text: str) -> str:
    """The capture cites paths under the corpus."""
    return script_line(f"{_PREFIX}scripts/{name}.py", text).replace(_PREFIX, "")


def _script(name: str, text: str) -> str:
    return script_line(f"{_PREFIX}scripts/{name}.py", text)


def test_an_output_added_to_a_returned_dict_under_an_if_is_cited_there() -> None:
    name = "h37_news_compiled_twin_heads"
    report = capture_report(CORPUS / "captures" / name)
    (recompile,) = report.recompiles
    (cause,) = recompile.causes
    assert str(cause.kind) == "output_added" and cause.fix_id == "output_added.returned", cause
    added = _line(name, 'outs["region"] = region.detach()')
    assert list(cause.sources[:3]) == [added, _line(name, "if log_region:"), recompile.call_site]
    assert "`if log_region:`" in cause.summary
    # the steady state's turns say the same, in the user's words
    assert report.steady_turns is not None and report.steady_turns.line == added
    assert report.steady_turns.phrase == "other outputs returned by the compiled function"


def test_an_if_that_returns_more_and_an_if_that_reorders_are_each_named() -> None:
    name = "h37_gait_compiled_meters_swap_probs"
    recompiles = capture_report(CORPUS / "captures" / name).recompiles
    assert [sorted({str(c.kind) for c in r.causes}) for r in recompiles] == [
        ["output_permutation"],
        ["output_added"],
        ["output_added"],
    ]
    assert recompiles[0].causes[0].sources[0] == _line(name, "if peak_first:")
    for r in recompiles[1:]:
        (cause,) = r.causes
        assert cause.fix_id == "output_added.returned"
        assert cause.sources[0] == _line(name, "return loss, logits.softmax(-1).detach()")


def test_returned_under_if_reads_the_traced_function() -> None:
    """The call's name is followed to `torch_xla.compile(f)` (a name or `self.<attr>`), and only
    additions to what `f` returns under an `if` count."""
    news, gait = "h37_news_compiled_twin_heads", "h37_gait_compiled_meters_swap_probs"
    call = _script(news, "outs = train(tokens.to(dev)")
    assert returned_under_if(call) == [_script(news, 'outs["region"] = region.detach()')]
    call = _script(gait, "out = step_fn(x, y")
    assert returned_under_if(call) == [_script(gait, "return loss, logits.softmax(-1).detach()")]
    # a method bound through `self.step_fn = torch_xla.compile(self._step)`: `val_loss = None`, set
    # under `if run_val:`
    tagger = "h23_tagger_eager_val_in_step_every3"
    call = _script(tagger, "loss, val_loss = self.step_fn(")
    assert returned_under_if(call) == [_script(tagger, "val_loss = self._loss(val_tokens, val_tags)")]
    # a call that traces nothing
    assert returned_under_if(_script(news, "pred = outs[\"region\"].cpu()")) == []


def test_branch_order_needs_the_same_statements_in_another_order() -> None:
    gait = "h37_gait_compiled_meters_swap_probs"
    peak = _script(gait, 'meters["peak"] = activation_peak(meters["peak"], hidden)')
    assert branch_order(peak) == [_script(gait, "if peak_first:")]
    # `if want_probs:` has no `else`, and an `if` around other work decides no order
    assert branch_order(_script(gait, "return loss, logits.softmax(-1).detach()")) == []


# Hand-written function shapes (syntax only, no capture: parser edge cases of the rule).
_SHAPES = {
    "decorated, a list appended under an if": (
        "import torch_xla\n"
        "@torch_xla.compile\n"
        "def step(x, keep):\n"
        "    outs = [x * 2]\n"
        "    if keep:\n"
        "        outs.append(x + 1)\n"
        "    return outs\n"
        "r = step(1, True)\n",
        [6],
    ),
    "an early return of fewer under an if": (
        "import torch_xla\n"
        "def f(x, short):\n"
        "    if short:\n"
        "        return (x,)\n"
        "    return x, x * 2\n"
        "g = torch_xla.compile(f)\n"
        "g(1, False)\n",
        [4],
    ),
    "a returned value changed under an if adds nothing": (
        "import torch_xla\n"
        "def f(x, aux):\n"
        "    loss = x * 2\n"
        "    if aux:\n"
        "        loss = loss + 1\n"
        "    return loss\n"
        "g = torch_xla.compile(f)\n"
        "g(1, True)\n",
        [],
    ),
    "an untraced function": (
        "def f(x, keep):\n"
        "    outs = {}\n"
        "    if keep:\n"
        "        outs['a'] = x\n"
        "    return outs\n"
        "f(1, True)\n",
        [],
    ),
}


def test_returned_under_if_on_function_shapes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for name, (code, expected) in _SHAPES.items():
        script = tmp_path / f"{abs(hash(name))}.py"
        script.write_text(code, encoding="utf-8")
        call = len(code.splitlines())
        found = returned_under_if(f"{script}:{call}")
        assert found == [f"{script}:{n}" for n in expected], (name, found)
