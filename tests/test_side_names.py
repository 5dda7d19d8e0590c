"""A report names the graphs of a recompile's diff by the report's letters, never by the engine's
"A" and "B", which in a report are other graphs of the run."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from xlagraph.diagnose.causes import name_sides

ROOT = Path(__file__).resolve().parents[1]


def test_sides_renamed_at_once_so_they_may_swap() -> None:
    text = "B returns 2 more tensors than A (A's output 1 is B's 3)"
    assert name_sides(text, "B", "A") == "A returns 2 more tensors than B (B's output 1 is A's 3)"
    assert name_sides(text, "C", "E") == "E returns 2 more tensors than C (C's output 1 is E's 3)"


def test_quoted_code_paths_and_words_keep_their_letters() -> None:
    text = "`B, T = x.shape` at models/A/net.py:3 in B; A-B pairs, Adam, BERT, A.weight"
    renamed = "`B, T = x.shape` at models/A/net.py:3 in D; A-B pairs, Adam, BERT, A.weight"
    assert name_sides(text, "C", "D") == renamed


@given(st.text(alphabet="AB 'sx`/.,()-:", max_size=40))
def test_swapping_the_sides_is_an_involution(text: str) -> None:
    assert name_sides(text, "A", "B") == text
    assert name_sides(name_sides(text, "B", "A"), "B", "A") == text


def test_a_report_recompile_names_its_own_graphs() -> None:
    capture = ROOT / "fixtures/torch_xla/compiled/heldout4_captures/chat_kv_generate/capture"
    from xlagraph.api import report

    r = report(str(capture))
    by_variant = {x.variant: x for x in r.recompiles}
    e = by_variant["E"]
    assert e.baseline is not None and e.baseline.variant == "C"
    assert any("in C and" in n and "in D never" in n for n in by_variant["D"].notes)
    # (E is the rest of a step `int(tok)` cut earlier: a graph_break, whose summary names no side.)
    capture = ROOT / "fixtures/torch_xla/corpus/captures/h27_forecast_openxla_refiner_switch"
    by_variant = {x.variant: x for x in report(str(capture)).recompiles}
    i = by_variant["I"]
    assert i.baseline is not None and i.baseline.variant == "D"
    added = next(c for c in i.causes if str(c.kind) == "output_added")
    assert added.summary.startswith("I returns 2 more tensors than D")
