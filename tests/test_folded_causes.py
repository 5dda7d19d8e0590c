"""A difference that follows from a named cause is folded into it (issue 37), on the corpus's
real torch_xla 2.9 captures (fixtures/torch_xla/corpus/captures, CPU device):

* h13_resmlp_bf16_autocast_later: a residual MLP (two look-alike blocks) switched to bf16
  autocast at step 3. In f32 each weight gradient is a view of its dot and each bias gradient a
  view of its reduction, whose bases torch_xla returns beside them; in bf16 they are converts,
  with no base. The 12 outputs fewer are those bases, whichever of a base or its look-alike view
  the output pairing happened to leave unpaired: no `output_removed` beside the switch. What
  the switch changed is said as counts: the ops that are converts in the other graph, the view
  bases only one graph returns.
* h12_byol_cnn_momentum_cosine: BYOL's target momentum reaches exactly 1.0, so
  `ema * m + p * (1.0 - m)` bakes 1 and 0 where other steps pass inputs. The target network's
  work computed from those values runs the same ops, wired otherwise (its two look-alike halves,
  one per augmented view, paired across): it is the constant's, not `structure` beside it. The
  two views' inputs are paired as most of their readers are, not as the first one the matcher
  met.
"""

from __future__ import annotations

from tests.corpus_reports import CAPTURES, corpus_report
from xlagraph.diff import diff_files


def _kinds(name: str, step: int) -> list[str]:
    (r,) = [r for r in corpus_report(name)["recompiles"] if r["step"] == step]
    return [c["kind"] for c in r["causes"]]


def test_the_view_bases_of_the_other_precision_are_no_removed_outputs() -> None:
    assert _kinds("h13_resmlp_bf16_autocast_later", 3) == ["dtype"]


def test_what_follows_from_the_switch_is_counted_not_listed() -> None:
    (r,) = [r for r in corpus_report("h13_resmlp_bf16_autocast_later")["recompiles"] if r["step"] == 3]
    (items,) = [a["items"] for a in r["attribution"] if a["kind"] == "dtype"]
    assert not [x for x in items if "-> convert" in x or x.startswith("output:")], items
    assert any("converts in the other" in x for x in items), items
    assert any(x.startswith("12 output(s) only A returns") for x in items), items


def test_the_work_of_a_term_that_vanishes_is_the_constants() -> None:
    kinds = _kinds("h12_byol_cnn_momentum_cosine", 6)
    assert "constant_value" in kinds and "structure" not in kinds, kinds


def test_the_baked_values_are_named() -> None:
    """`m` is baked as 1 and `1.0 - m` as 0: the cause says which input became which."""
    (r,) = [r for r in corpus_report("h12_byol_cnn_momentum_cosine")["recompiles"] if r["step"] == 6]
    (summary,) = [c["summary"] for c in r["causes"] if c["kind"] == "constant_value"]
    assert " is 1" in summary and " is 0" in summary, summary


def test_the_two_views_inputs_are_paired_as_most_of_their_readers_are() -> None:
    """Graphs B (step 1) and C (step 6) of the BYOL run: the two augmented views `x0` and `x1`
    (`p6.7`, `p7.36` in both dumps) are read by the online and the target network alike; the
    matcher met one of them first through the other half's reader, their other readers say
    they stayed in place."""
    hlo = sorted((CAPTURES / "h12_byol_cnn_momentum_cosine" / "hlo").iterdir())
    result = diff_files(str(hlo[1]), str(hlo[2]))
    pairs = {(m.left_name, m.right_name) for c in result.causes for m in c.mapping if m.what == "input"}
    assert ("p6.7", "p7.36") not in pairs and ("p7.36", "p6.7") not in pairs, sorted(pairs)[:8]
