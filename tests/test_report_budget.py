"""The live-tensor report's budget goes first to the steps that compile a new graph: a step whose
counts of XLA tensors created and destroyed no earlier marker had looks new, and gets the report
when it costs under a quarter of a compile, even past the warm-up, the 2% budget and the markers
right after a compile. A loop whose counts keep changing without compiling stops buying reports
after MAX_WRONG_GUESSES."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

from xlagraph.capture._settings import Settings
from xlagraph.capture._state import RunState
from xlagraph.capture._tensors_report import (
    MAX_WRONG_GUESSES,
    _affordable,
    _looks_new,
    settle_guess,
)

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "torch_xla" / "corpus"


class _Counters:
    """torch_xla's counters as `_looks_new` reads them."""

    def __init__(self) -> None:
        self.values = {"CreateXlaTensor": 0, "DestroyXlaTensor": 0}

    def step(self, created: int, destroyed: int) -> None:
        self.values["CreateXlaTensor"] += created
        self.values["DestroyXlaTensor"] += destroyed

    def _xla_counter_value(self, name: str) -> int | None:
        return self.values.get(name)


def _steady_state(markers: int = 20) -> RunState:
    """Past the warm-up and the markers after the last compile, the 2% budget spent."""
    s = RunState(markers=markers, last_compile_marker=1, compile_seconds=2.0, compile_count=2)
    s.report_spent, s.report_cost = 5.0, 0.05
    return s


def _settings() -> Settings:
    return Settings.from_env({})


def test_a_step_looks_new_only_the_first_time_its_counts_come() -> None:
    s, xlac = RunState(), _Counters()
    seen = []
    for created, destroyed in [(15, 8), (14, 14), (14, 14), (14, 13), (14, 14), (14, 13)]:
        xlac.step(created, destroyed)
        seen.append(_looks_new(s, xlac))
    assert seen == [True, True, False, True, False, False]


def test_a_new_looking_step_gets_the_report_past_every_other_budget() -> None:
    s = _steady_state()
    s.looks_new = True
    assert _affordable(s, _settings(), elapsed=10.0)
    assert s.guessed
    s.looks_new = False
    assert not _affordable(s, _settings(), elapsed=10.0)
    assert not s.guessed


def test_within_a_quarter_of_a_compile_only() -> None:
    s = _steady_state()
    s.looks_new, s.report_cost = True, 0.3  # the mean compile is 1 s
    assert not _affordable(s, _settings(), elapsed=10.0)


def test_guesses_that_found_no_compile_stop_buying_reports() -> None:
    s = _steady_state()
    for _ in range(MAX_WRONG_GUESSES):
        s.looks_new = True
        assert _affordable(s, _settings(), elapsed=10.0)
        settle_guess(s, compiled=False)
    s.looks_new = True
    assert not _affordable(s, _settings(), elapsed=10.0)


def test_a_right_guess_costs_nothing_of_the_allowance() -> None:
    s = _steady_state()
    s.looks_new = True
    assert _affordable(s, _settings(), elapsed=10.0)
    settle_guess(s, compiled=True)
    assert s.wrong_guesses == 0 and not s.guessed


def _journal(name: str) -> list[dict]:
    with open(CORPUS / "captures" / name / "journal.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_the_graphs_compiled_at_a_late_bug_step_have_their_report() -> None:
    """held_out_21's first run: a widened head (step 3) and a tensor kept alive every third step
    (step 2) compiled past the warm-up with their report skipped; recaptured, each has it."""
    manifest = {e["name"]: e for e in json.loads((CORPUS / "MANIFEST.json").read_text())["scenarios"]}
    for name in ("h21_intent_class_incremental_head", "h21_tcn_compiled_log_every_keepalive"):
        graphs = [r for r in _journal(name) if r["k"] == "graph" and r["compiled"]]
        late = [g for g in graphs if g["step"] == manifest[name]["bug_step"]]
        assert len(late) == 1, name
        assert late[0].get("tensors") and late[0].get("holders"), (name, late[0].get("tensors_note"))
        report = CORPUS / "captures" / name / (late[0]["tensors"] + ".xz")
        assert "Tensor: id=" in lzma.decompress(report.read_bytes()).decode()
