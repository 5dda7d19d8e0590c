"""How far a long command has got (`recompile 7/19`, `rank 412/1024`), for a status line.

Library code says where it is with `step(what, done, total)`, or walks a sequence through
`counted(what, items)`; nothing is said unless a caller has installed a sink with `shown(sink)`.
The CLI installs its terminal status line there (shown on a terminal only, never with
`--quiet`), so the library never writes to stderr itself and piped output stays clean.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import TypeVar

__all__ = ["Sink", "counted", "shown", "status_line", "step"]


Sink = Callable[[str], None]
T = TypeVar("T")

_SINK: ContextVar[Sink | None] = ContextVar("xlagraph_progress", default=None)


def step(what: str, done: int, total: int) -> None:
    """Say that `done` of `total` `what`s are under way (1-based: the one being worked on)."""
    sink = _SINK.get()
    if sink is not None:
        sink(f"{what} {done}/{total}")


def counted(what: str, items: Sequence[T]) -> Iterator[T]:
    """`items`, saying `what k/n` as the k-th is reached."""
    total = len(items)
    for k, item in enumerate(items, 1):
        step(what, k, total)
        yield item


@contextmanager
def shown(sink: Sink | None) -> Iterator[None]:
    """Send the steps taken inside the block to `sink` (None: say nothing)."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


class _Line(AbstractContextManager["_Line"]):  # what the CLI's status line provides
    def set(self, phase: str) -> None: ...


@contextmanager
def status_line(factory: Callable[..., _Line], quiet: bool) -> Iterator[_Line]:
    """A command's status line (`factory(stream=...)`, shown on a terminal only) that also says
    the library's steps; with `quiet` it writes nowhere and the steps are not said."""
    with factory(stream=io.StringIO()) if quiet else factory() as line, shown(None if quiet else line.set):
        yield line
