"""benchmarks/score_ranks.py on the three known rank scenarios (fixtures/torch_xla/ranks/TRUTH.json,
judged from their README): the scorer reads the rank view as the held-out round will be read.
The held-out round (ranks/heldout/) is scored once by hand, never here."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from score_ranks import RANKS, main, report_json, score, total

TRUTH = RANKS / "TRUTH.json"


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    truth = json.loads(TRUTH.read_text())
    names = [k for k in truth if not k.startswith("_")]
    assert names == ["log_rank0", "short_batch", "even"]
    return {n: score(n, truth[n], report_json(RANKS / n / "capture")["ranks"]) for n in names}


def test_known_scenarios_are_found(rows: dict[str, dict]) -> None:
    for row in rows.values():
        assert all(row[c] is True for c in ("agree", "step", "ranks", "hang", "hang_step", "kind")), row


def test_short_batch_cites_its_line_and_even_is_clean(rows: dict[str, dict]) -> None:
    assert rows["short_batch"]["line"] is True and rows["short_batch"]["kinds"] == ["parameter_shape"]
    assert rows["short_batch"]["false"] == 0
    assert rows["even"]["false"] == 0 and rows["even"]["line"] == "n/a" and rows["even"]["kinds"] == []


def test_a_forbidden_kind_and_a_divergence_on_a_clean_run_count_as_false() -> None:
    truth = {
        "agree": True,
        "divergent_step": None,
        "diverging_ranks": [],
        "hang": False,
        "collective_step": None,
        "kinds": {"expected": [], "accepted": []},
        "forbidden": ["parameter_shape"],
        "guilty_line": None,
    }
    cause = {"kind": "parameter_shape", "sources": ["a/b/train.py:7"]}
    diverged = {
        "agree": False,
        "collectives": None,
        "divergence": {
            "step": 2,
            "groups": [{"ranks": [0, 1, 2]}, {"ranks": [3]}],
            "diffs": [{"causes": [cause]}],
        },
    }
    row = score("x", truth, diverged)
    assert row["false"] == 1 and not row["agree"] and not row["kind"] and not row["step"]
    guilty = {
        **truth,
        "agree": False,
        "divergent_step": 2,
        "diverging_ranks": [3],
        "forbidden": [],
        "kinds": {"expected": ["parameter_shape"], "accepted": []},
        "guilty_line": "train.py:7",
    }
    row = score("y", guilty, diverged)
    assert row["false"] == 0 and row["kind"] and row["line"] is True and row["ranks"] and row["hang"]
    assert total([row])["goal_met"]
    assert score("z", guilty, None)["agree"] is False


def test_the_command_prints_a_total_row(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--set", "ranks", "even"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("total") and "even" in out
