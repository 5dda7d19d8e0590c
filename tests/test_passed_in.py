"""`_passed_in`: a loop, inside a function `torch_xla.compile` traces, over one of its parameters is
ordered where the caller sets the argument (issue 37). Hand-written function shapes (no graph: the
rule reads only source); the real capture is held_out_39's h39_kiln_compiled_stats_flip2_logged."""

from __future__ import annotations

from pathlib import Path

from xlagraph.diagnose.frames import SourceText, reading_sources
from xlagraph.diagnose.recognizers._loop_order import loop_order

SOURCE = '''\
import torch_xla


@torch_xla.compile
def step(x, order, flag=False):
    for name in order:
        stats[name] = stats[name] + x
    return x


def wrapped(x, keys):
    for k in keys:
        stats[k] = stats[k] * x


wrapped_fn = torch_xla.compile(wrapped)


def plain(x, order):
    for name in order:
        stats[name] = stats[name] - x


for i in range(4):
    order = names if i % 2 == 0 else names[::-1]
    step(x, order)
    keys = list(stats)
    if i % 3 == 0:
        keys.reverse()
    wrapped_fn(x, keys=keys)
    plain(x, order)
'''


def _order(tmp_path: Path, line_of: str) -> list[int]:
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    line = next(n for n, t in enumerate(SOURCE.splitlines(), 1) if line_of in t)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        return [int(x.rsplit(":", 1)[1]) for x in loop_order(f"{path}:{line}")]


def _line(text: str) -> int:
    return next(n for n, t in enumerate(SOURCE.splitlines(), 1) if text in t)


def test_decorated_step_is_ordered_by_the_callers_argument(tmp_path: Path) -> None:
    # the caller's assignment and its call come before the loop's header
    found = _order(tmp_path, "stats[name] + x")
    assert found[:3] == [_line("order = names if"), _line("step(x, order)"), _line("for name in order")]


def test_wrapped_step_follows_a_keyword_argument_and_its_if(tmp_path: Path) -> None:
    found = _order(tmp_path, "stats[k] * x")
    decided = [_line("keys = list"), _line("if i % 3"), _line("keys.reverse()"), _line("wrapped_fn(x, keys")]
    assert found[:5] == [*decided, _line("for k in keys")]


def test_an_untraced_function_keeps_its_own_loop(tmp_path: Path) -> None:
    # a plain Python call is not a trace: the loop inside is cited as before
    loops = [n for n, t in enumerate(SOURCE.splitlines(), 1) if "for name in order:" in t]
    assert _order(tmp_path, "stats[name] - x") == [loops[1]]
