"""held_out_30's misses, end to end on its real captures (tuned on after its first blind run,
recorded in docs/accuracy.md), and the rules behind them on small written scripts."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.diagnose.recognizers._dropout_mode import mode_switched
from xlagraph.diagnose.recognizers._precision import _typed_names
from xlagraph.diagnose.recognizers._statements import syntax_tree

CAPTURES = FIXTURES / "torch_xla" / "corpus" / "captures"


def _first_bug(name: str, step: int):  # type: ignore[no-untyped-def]
    report = capture_report(CAPTURES / name)
    return next(r for r in report.recompiles if r.step == step and not r.expected)


def _script(name: str, line: int) -> str:
    return f"scripts/{name}.py:{line}"


def test_random_work_under_a_python_counter_is_that_if_not_a_mode_toggle() -> None:
    """An R-Drop term (a second dropout forward) added under `if samples_seen >= 24:` in a lazy
    loop whose only mode call is one `model.train()` before it: no mode toggles, so the `if` turns
    the random work on; cited at the `if` with the host-branch fix (was "model.train() /
    model.eval() toggled" at the term's lines)."""
    name = "h30_topic_lazy_rdrop_after_warmup"
    (cause,) = [c for c in _first_bug(name, 3).causes if not c.info]
    assert cause.fix_id == "conditional_work.host_branch", cause
    assert list(cause.sources[:2]) == [_script(name, 43), _script(name, 44)]


def test_a_dtype_that_reaches_its_casts_through_a_variable_is_cited_where_it_is_decided() -> None:
    """`dt = torch.bfloat16 if self.cfg.bf16_encoder else torch.float32`, then `.to(dt)` on the
    convolutions' inputs and weights, flipped mid-run by a callback: the assignment that decides
    the type comes before the casts (was the casts only)."""
    name = "h30_phones_eager_bf16_flag"
    (cause,) = [c for c in _first_bug(name, 4).causes if not c.info]
    assert str(cause.kind) == "dtype"
    assert list(cause.sources[:2]) == [_script(name, 32), _script(name, 33)]


def _write(tmp_path: Path, text: str, name: str = "train.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_one_train_call_before_the_loop_switches_no_mode(tmp_path: Path) -> None:
    once = "model.train()\nfor step in range(3):\n    run(step)\n"
    assert not mode_switched([_write(tmp_path, once)])


def test_an_eval_call_or_a_train_call_in_the_loop_switches_modes(tmp_path: Path) -> None:
    for n, text in enumerate(
        (
            "model.train()\nfor step in range(3):\n    run(step)\nmodel.eval()\n",
            "for step in range(3):\n    model.train()\n    run(step)\n",
            "def evaluate():\n    model.eval()\n",
            "model.train(False)\n",
        )
    ):
        assert mode_switched([_write(tmp_path, text, f"train{n}.py")]), text


def test_a_type_picked_by_a_condition_is_a_typed_name(tmp_path: Path) -> None:
    text = (
        "def forward(x, flag):\n"
        "    dt = torch.bfloat16 if flag else torch.float32\n"
        "    n = 3 if flag else 4\n"
        "    return x.to(dt)\n"
    )
    tree = syntax_tree(_write(tmp_path, text))
    assert tree is not None
    assert _typed_names(tree.body[0]) == {"dt": 2}
