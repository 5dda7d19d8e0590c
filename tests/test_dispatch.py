"""`_dispatch`: calls of a helper through a table of functions (`UPDATERS[name](...)`, `getattr`
with literal names) reach each function the table holds, so the loop that calls them orders their
outputs (issue 37). Hand-written source shapes (no graph: the rule reads only source); the real
captures are held_out_39's h39_kiln_compiled_stats_flip2_logged and fixtures/torch_xla/dispatch_table."""

from __future__ import annotations

from pathlib import Path

from xlagraph.diagnose.frames import SourceText, reading_sources
from xlagraph.diagnose.recognizers._dispatch import calls_through_table
from xlagraph.diagnose.recognizers._permutation_site import _calling_loop
from xlagraph.diagnose.recognizers._source import calls_of_function

HELPERS = """\
import torch


def ema(state, x):
    return 0.9 * state + 0.1 * x.mean(0)


def peak(state, x):
    return torch.maximum(state, x.amax(0))


def unused(state, x):
    return state
"""

TRAIN = """\
import torch_xla
import helpers
from helpers import ema, peak

UPDATERS = {"ema": ema, "peak": helpers.peak}
AS_LIST = [ema, peak]
NOT_A_TABLE = {"ema": lambda s, x: s}


@torch_xla.compile
def step(x, order):
    for name in order:
        stats[name] = UPDATERS[name](stats[name], x)
    return x


def by_index(x, picks):
    for i in picks:
        stats[i] = AS_LIST[i](stats[i], x)


def by_getattr(x):
    for fn in ("ema", "peak"):
        stats[fn] = getattr(helpers, fn)(stats[fn], x)
    getattr(helpers, "unused")(stats["u"], x)
    getattr(helpers, some_name)(stats["v"], x)
    NOT_A_TABLE["ema"](stats["w"], x)


for i in range(4):
    order = names if i % 2 == 0 else names[::-1]
    step(x, order)
"""


def _write(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "train.py").write_text(TRAIN)
    return str(tmp_path / "helpers.py"), str(tmp_path / "train.py")


def _line(source: str, text: str) -> int:
    return next(n for n, t in enumerate(source.splitlines(), 1) if text in t)


def _lines(found: list[str]) -> list[int]:
    return [int(x.rsplit(":", 1)[1]) for x in found]


def test_a_dict_a_list_and_getattr_reach_the_functions_they_name(tmp_path: Path) -> None:
    _, train = _write(tmp_path)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        ema = _lines(calls_through_table("ema", [train], limit=10))
        peak = _lines(calls_through_table("peak", [train], limit=10))
    # `helpers.peak` in the dict is the function `peak`; the list holds both by name
    dispatched = [
        _line(TRAIN, "UPDATERS[name]("),
        _line(TRAIN, "AS_LIST[i]("),
        _line(TRAIN, "getattr(helpers, fn)"),
    ]
    assert ema == dispatched
    assert peak == dispatched


def test_what_names_no_function_is_not_a_call_of_it(tmp_path: Path) -> None:
    # a lambda in a table, a getattr whose name is not spelled out: no call of `ema` or `unused`
    # (only the literal `getattr(helpers, "unused")` reaches `unused`)
    _, train = _write(tmp_path)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        ema = _lines(calls_through_table("ema", [train], limit=10))
        unused = _lines(calls_through_table("unused", [train], limit=10))
    assert _line(TRAIN, "NOT_A_TABLE[") not in ema
    assert _line(TRAIN, "some_name") not in ema
    assert unused == [_line(TRAIN, 'getattr(helpers, "unused")')]


def test_tables_are_searched_only_in_the_files_given(tmp_path: Path) -> None:
    helpers, train = _write(tmp_path)
    at = f"{helpers}:{_line(HELPERS, '0.9 * state')}"
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        assert calls_of_function(at, limit=5, through_loops=True) == []
        found = calls_of_function(at, limit=5, through_loops=True, tables_in=[train])
    assert found[0] == f"{train}:{_line(TRAIN, 'UPDATERS[name](')}"


def test_the_dispatching_loop_leads_to_the_callers_decision(tmp_path: Path) -> None:
    # both helpers are called from one loop through the table: that loop orders their outputs, and
    # its iterable is a parameter of a compiled step, so the caller's assignment comes first
    helpers, train = _write(tmp_path)
    user = [f"{helpers}:{_line(HELPERS, '0.9 * state')}", f"{helpers}:{_line(HELPERS, 'torch.maximum')}"]
    syncs = (f"{train}:{_line(TRAIN, '    step(x, order)')}",)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        found = _lines(_calling_loop(user, syncs, [train]))
        alone = _calling_loop(user, syncs, [])
    assert found[:3] == [
        _line(TRAIN, "order = names if"),
        _line(TRAIN, "    step(x, order)"),
        _line(TRAIN, "for name in order"),
    ]
    assert alone == []
