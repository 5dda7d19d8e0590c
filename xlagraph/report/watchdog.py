"""`XLAGRAPH_ON_RECOMPILE=warn|raise`: told during the run, by a helper process.

The capturing process starts this module (`python -m xlagraph.report.watchdog`) at low priority,
with no capture of its own and no torch: it follows the process's capture folder as `watch` does
(`report/watch.py`) and prints each recompile after the warm-up that is not expected; with
`raise` it writes the verdict (`fmt.VERDICT`) and how far into the journal it has read
(`fmt.WATCHDOG_SEEN`) for the recorder to raise `RecompileError` at the next step boundary. What
each mode does, when the recorder waits and what the warm-up is: docs/watch.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import suppress

from xlagraph.capture import files as fmt

__all__ = ["main"]

PREFIX = "xlagraph:"
_KINDS = ("recompile", "torch.compile", "eager")


def _after_warmup(step: int | None, warmup: int | None, quiet_steps: set[int]) -> bool:
    if step is None:
        return False
    if warmup is not None:
        return step > warmup
    return any(s < step for s in quiet_steps)


def _quiet_steps(report: object) -> set[int]:
    """Steps of the run so far that compiled nothing (the report's warm-up ends at the first)."""
    timeline = getattr(report, "timeline", ())
    compiled = {e.step for e in timeline if e.compiled}
    dynamo = getattr(report, "dynamo", None)
    if dynamo is not None:
        compiled |= {e.step for e in dynamo.events if e.step is not None}
    eager = getattr(report, "eager", None)
    if eager is not None:
        compiled |= {step for step, _ in eager.by_step}
    steps = getattr(report, "steps", 0)
    return {s for s in range(steps) if s not in compiled}


def run(proc_dir: str, mode: str, warmup: int | None, parent: int, interval: float = 0.2) -> int:
    from xlagraph.render.watch import event_line
    from xlagraph.report.watch import Watcher

    watcher = Watcher(proc_dir)
    told = -1
    while True:
        try:
            events = watcher.poll()
        except Exception:  # (a folder changing under it: look again)
            events = []
        reports = watcher.reports()
        for e in events:
            if e.kind not in _KINDS or e.expected:
                continue
            report = reports.get(e.process)
            if not _after_warmup(e.step, warmup, _quiet_steps(report)):
                continue
            text = f"recompile after the warm-up: {event_line(e)}"
            print(f"{PREFIX} {text}", file=sys.stderr, flush=True)
            if mode == "raise":
                verdict = {"text": text, "step": e.step, "capture": proc_dir, "kind": e.kind}
                _write_atomic(os.path.join(proc_dir, fmt.VERDICT), json.dumps(verdict))
                return 0
        if mode == "raise" and (read := watcher.journal_read()) != told:
            # the recorder waits on this after a compiled step: the step is told (or not to be)
            _write_atomic(os.path.join(proc_dir, fmt.WATCHDOG_SEEN), str(read))
            told = read
        if watcher.done or not _alive(parent):
            return 0
        time.sleep(interval)


def _write_atomic(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)  # the recorder sees it whole or not at all


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def main(argv: list[str]) -> int:
    proc_dir, mode, warmup, parent = argv
    with suppress(OSError):
        os.nice(10)  # after the training process, always
    try:
        return run(proc_dir, mode, None if warmup == "auto" else int(warmup), int(parent))
    except KeyboardInterrupt:
        return 0
    except Exception as e:  # never the run's problem: one line, and the run goes on
        print(f"{PREFIX} XLAGRAPH_ON_RECOMPILE stopped: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
