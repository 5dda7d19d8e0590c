"""`_loop_order.loop_order`: where the order of the loop around a line is decided, on hand-written
source (no graph: the rule reads only source)."""

from __future__ import annotations

from pathlib import Path

from xlagraph.diagnose.frames import SourceText, reading_sources
from xlagraph.diagnose.recognizers._loop_order import loop_order
from xlagraph.diagnose.recognizers._statements import calls_through_loop

SOURCE = '''\
class Trainer:
    def ordered(self):
        def key(m):
            return m.name
        return sorted(self.meters, key=key)

    def step(self, out):
        for m in self.ordered():
            m.update(out)


def by_size(params):
    return sorted(params, key=lambda p: p.numel())


def update(params):
    for p in by_size(params):
        p.add_(1)
'''


def _order(tmp_path: Path, line_of: str) -> list[int]:
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    line = next(n for n, t in enumerate(SOURCE.splitlines(), 1) if line_of in t)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        return [int(x.rsplit(":", 1)[1]) for x in loop_order(f"{path}:{line}")]


def test_a_loop_over_a_method_s_result_is_ordered_by_its_return(tmp_path: Path) -> None:
    # the method's own return, not the one of the function nested in it
    assert _order(tmp_path, "m.update(out)") == [8, 5]


def test_a_loop_over_a_function_s_result_is_ordered_by_its_return(tmp_path: Path) -> None:
    assert _order(tmp_path, "p.add_(1)") == [17, 13]


FILLED = """\
class Trainer:
    def __init__(self, names):
        self.callbacks = [make(n) for n in names]

    def load(self, state):
        self.callbacks = []
        for name in sorted(state):
            self.callbacks.append(make(name))

    def step(self, out):
        for cb in self.callbacks:
            cb.update(out)
"""


def test_a_list_filled_in_a_loop_is_ordered_by_that_loop(tmp_path: Path) -> None:
    """`self.callbacks.append(...)` under `for name in sorted(state):` in another method: the
    list's order is that loop's iteration order, cited with the lines that set the list."""
    path = tmp_path / "filled.py"
    path.write_text(FILLED)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        found = [int(x.rsplit(":", 1)[1]) for x in loop_order(f"{path}:12")]
    assert found == [11, 3, 6, 7, 8]


LOOPED = '''\
def step(flag, x):
    def first():
        return x + 1

    def second():
        return x * 2

    for update in (first, second) if flag else (second, first):
        update()
    for name in ("first", "second"):
        print(name)
'''


def test_a_loop_over_the_functions_calls_them_through_its_variable(tmp_path: Path) -> None:
    """`for update in (first, second) if flag else (second, first): update()` calls `first`
    (at `update()`); a loop over strings that spell its name calls nothing."""
    path = tmp_path / "train.py"
    path.write_text(LOOPED)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        assert calls_through_loop("first", [str(path)]) == [f"{path}:9"]
        assert calls_through_loop("step", [str(path)]) == []
        assert [int(x.rsplit(":", 1)[1]) for x in loop_order(f"{path}:9")] == [8]
