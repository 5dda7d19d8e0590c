"""`watch`: a capture told as it is written (`report/watch.py`), event by event."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xlagraph.errors import reading

if TYPE_CHECKING:
    from xlagraph.report.watch import WatchEvent

__all__ = ["Event", "watch"]


@dataclass(frozen=True)
class Event:
    """One thing `watch` tells: `kind` (recompile | torch.compile | eager | steady | ranks | end),
    the process, the step, whether it is expected (warm-up), and its text and JSON."""

    kind: str
    process: str
    step: int | None
    expected: bool
    text: str
    json: str
    raw: WatchEvent


def watch(
    capture_dir: str,
    *,
    follow: bool = True,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[Event]:
    """The events of the capture at `capture_dir`, in the order the run made them. With `follow`
    it polls every `interval` seconds until every process has ended (cleanly, or gone from this
    host); without it, it tells what is there now and stops. Bad input raises `InputError`."""
    from xlagraph.render.watch import event_json, event_line
    from xlagraph.report.watch import Watcher

    with reading(capture_dir):
        watcher = Watcher(capture_dir)
    while True:
        with reading(capture_dir):
            events = watcher.poll()
        for e in events:
            yield Event(e.kind, e.process, e.step, e.expected, event_line(e), event_json(e), e)
        if not follow or watcher.done:
            return
        sleep(interval)
