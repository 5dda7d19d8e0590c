"""pytest plugin: fail a test when the code under test compiles more XLA graphs than allowed.

    def test_train_step_is_stable(xla_graph_budget):
        train_step()  # warm-up: compiles
        with xla_graph_budget(max_graphs=0):
            for _ in range(5):
                train_step()  # must replay the cached graph

The budget counts torch_xla's own `CompileTime` metric (one sample per compile), so it needs
no PT_XLA_DEBUG and no dump. When the block ends, pending work is synced first (`sync=False`
turns that off), so a graph the block built but did not run is counted too. To see *why* a
graph compiled, run the test under `XLAGRAPH_CAPTURE=DIR` and read `xlagraph report DIR`.

Loaded through the `pytest11` entry point; torch_xla is imported only when the fixture is used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest

__all__ = ["compile_count", "graph_budget", "xla_graph_budget"]


def compile_count() -> int:
    """How many graphs torch_xla compiled in this process so far."""
    import torch_xla.debug.metrics as met

    data = met.metric_data("CompileTime")
    return int(data[0]) if data else 0


@contextmanager
def graph_budget(max_graphs: int, sync: bool = True) -> Iterator[None]:
    """Fail the current test when the block compiles more than `max_graphs` graphs."""
    if max_graphs < 0:
        raise ValueError(f"max_graphs must be 0 or more, got {max_graphs}")
    before = compile_count()
    yield
    if sync:
        import torch_xla

        torch_xla.sync()
    compiled = compile_count() - before
    if compiled > max_graphs:
        pytest.fail(
            f"{compiled} XLA graph(s) compiled inside xla_graph_budget, at most {max_graphs} allowed: "
            "run under XLAGRAPH_CAPTURE=DIR and `xlagraph report DIR` to see why",
            pytrace=False,
        )


@pytest.fixture
def xla_graph_budget() -> Callable[..., AbstractContextManager[None]]:
    """`with xla_graph_budget(max_graphs=N): ...` fails the test past N compiles."""
    return graph_budget
