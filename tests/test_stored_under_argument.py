"""`_traced_returns.returned_under_if` on stores (issue 37): inside a function `torch_xla.compile`
traces, a value stored into state that outlives the call (a module-level list appended, an item or
an attribute of `self` set) under an `if` on a parameter is an output on the calls passing a true
value only. Hand-written function shapes (no graph: the rule reads only source); the real capture
is held_out_39's h39_glacier_eager_keep_last_embedding."""

from __future__ import annotations

from pathlib import Path

from xlagraph.diagnose.frames import SourceText, reading_sources
from xlagraph.diagnose.recognizers._traced_returns import returned_under_if

SOURCE = '''\
import torch_xla

kept = []
stats = {}


@torch_xla.compile
def append_step(x, keep):
    y = x * 2
    if keep:
        kept.append(y.detach())
    return y


@torch_xla.compile
def item_step(x, name=None):
    y = x + 1
    if name is not None:
        stats[name] = y
    return y


class Runner:
    def _step(self, x, log):
        y = x - 1
        if log:
            self.last = y
        return y


@torch_xla.compile
def local_step(x, keep):
    mine = []
    if keep:
        mine.append(x)
    return x


@torch_xla.compile
def swap_step(x, first):
    if first:
        stats["a"] = x
        stats["b"] = x + 1
    else:
        stats["b"] = x + 1
        stats["a"] = x
    return x


@torch_xla.compile
def global_step(x):
    if len(kept) > 2:
        kept.append(x)
    return x


runner = Runner()
runner.step_fn = torch_xla.compile(runner._step)
append_step(x, keep=True)
item_step(x, "a")
runner.step_fn(x, log=True)
local_step(x, True)
global_step(x)
swap_step(x, True)
'''


def _line(text: str) -> int:
    return next(n for n, t in enumerate(SOURCE.splitlines(), 1) if text in t)


def _stores(tmp_path: Path, call: str) -> list[int]:
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        return [int(x.rsplit(":", 1)[1]) for x in returned_under_if(f"{path}:{_line(call)}")]


def test_append_to_a_module_list_under_a_flag(tmp_path: Path) -> None:
    assert _stores(tmp_path, "append_step(x, keep=True)") == [_line("kept.append(y.detach())")]


def test_item_set_in_a_module_dict_under_an_argument_test(tmp_path: Path) -> None:
    assert _stores(tmp_path, 'item_step(x, "a")') == [_line("stats[name] = y")]


def test_attribute_of_self_in_a_wrapped_method(tmp_path: Path) -> None:
    assert _stores(tmp_path, "runner.step_fn(x, log=True)") == [_line("self.last = y")]


def test_a_local_list_and_an_if_on_no_argument_are_not_stores(tmp_path: Path) -> None:
    # a list made in the call dies with it; an `if` on module state is not the caller's choice
    assert _stores(tmp_path, "local_step(x, True)") == []
    assert _stores(tmp_path, "global_step(x)") == []


def test_a_store_both_branches_make_is_there_on_every_call(tmp_path: Path) -> None:
    # two updates swapped by the flag reorder outputs; they add none
    assert _stores(tmp_path, "swap_step(x, True)") == []
