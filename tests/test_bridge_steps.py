"""A user's torch_xla.sync() is one step even where it runs nothing: under torch.compile(openxla)
the bridge's input sync and cached forward can run all of an iteration's graphs (here a student
whose loss hands it no gradients, so SGD changes nothing), and capture used to skip such a sync as
an empty marker, joining the warm-up iteration (and a retrace's) to the next one: 5 and 4 steps
for 6 iterations. Real captures: fixtures/torch_xla/bridge_steps/generate.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xlagraph.capture.reader import read_capture
from xlagraph.report.build import build_report

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "torch_xla" / "bridge_steps"


def _capture(name: str) -> Path:
    (proc,) = (HERE / f"{name}_capture").iterdir()
    return proc


def _steps(name: str) -> list[str]:
    """The report's timeline, one entry per step: its graphs joined by `+` (`*` compiled)."""
    report = build_report(read_capture(str(_capture(name)))[0])
    steps: dict[int, list[str]] = {}
    for e in report.timeline:
        steps.setdefault(e.step, []).append(e.variant + ("*" if e.compiled else ""))
    return ["+".join(v) for _, v in sorted(steps.items())]


@pytest.mark.parametrize(
    ("name", "timeline"),
    [
        # warm-up (the bridge's syncs and its first forward), then the inputs' sync and the forward
        ("distill_openxla_clean", ["A*+B*+C*", "D*+B"] + ["D+B"] * 4),
        # the temperature changes at iteration 3: dynamo retraces, the bridge syncs again
        ("distill_openxla_retrace", ["A*+B*+C*", "D*+B", "D+B", "A+B+C", "D+B", "D+B"]),
    ],
)
def test_each_user_sync_is_one_step_with_its_iterations_graphs(name: str, timeline: list[str]) -> None:
    assert _steps(name) == timeline  # 6 iterations, 6 steps


@pytest.mark.parametrize("name", ["distill_openxla_clean", "distill_openxla_retrace"])
def test_the_user_sync_that_ran_nothing_closes_the_bridges_records(name: str) -> None:
    records = [json.loads(x) for x in (_capture(name) / "journal.jsonl").read_text().splitlines()]
    steps = [r for r in records if r["k"] == "step"]
    empty = [i for i, r in enumerate(steps) if not r["e"]]
    assert empty and all(steps[i - 1].get("bridge") and not steps[i].get("bridge") for i in empty)
