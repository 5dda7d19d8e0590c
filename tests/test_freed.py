"""What the API reads is freed when the caller lets go of it: a notebook that diffs or reports
in a loop, `watch` over a days-long run, and the fuzz harness's long-lived worker call the engine
again and again in one process. The engine's per-object caches must not keep a graph alive (a
WeakKeyDictionary whose value refers back to its key does: the canonical form keeps its module).
Real dumps and a real capture (fixtures/)."""

from __future__ import annotations

import gc

import xlagraph.api as api
from tests.conftest import FIXTURES
from xlagraph.ir import Module

PAIRS = sorted((FIXTURES / "torch_xla").glob("*/a.hlo"))[:12]
CAPTURE = FIXTURES / "torch_xla" / "corpus" / "captures" / "h28_gan_lazy_ema_every_k"


def _live_modules() -> int:
    gc.collect()
    return sum(isinstance(o, Module) for o in gc.get_objects())


def test_diffs_free_their_graphs() -> None:
    before = _live_modules()
    pairs = [(a, a.with_name("b.hlo")) for a in PAIRS if a.with_name("b.hlo").exists()]
    assert len(pairs) >= 5
    for a, b in pairs:
        api.diff(str(a), str(b)).to_json()
    assert _live_modules() == before


def test_reports_free_their_graphs(monkeypatch) -> None:
    monkeypatch.setenv("XLAGRAPH_WORKERS", "1")  # the diffs in this process, not in forked workers
    before = _live_modules()
    for _ in range(3):
        api.report(str(CAPTURE)).to_json()
    assert _live_modules() == before
