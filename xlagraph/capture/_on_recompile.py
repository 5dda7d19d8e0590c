"""`XLAGRAPH_ON_RECOMPILE=warn|raise`: the capturing side. A helper process does the analysis
(`report/watchdog.py`, started here at low priority with no capture of its own); this process
only looks, at each step boundary, for the helper's verdict file (`raise`) and raises
`RecompileError` with it, after a step that compiled past a quiet one waiting until the helper has
read the journal that far (`fmt.WATCHDOG_SEEN`, at most `WAIT_S`). When it waits and why the
wait is short: docs/watch.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.errors import RecompileError

__all__ = ["OnRecompile"]

# the capture's own settings: the helper must not capture itself, nor pay for torch_xla's debug
_NOT_INHERITED = ("XLAGRAPH_", "PT_XLA_DEBUG", "XLA_IR_DEBUG", "XLA_HLO_DEBUG", "XLA_FLAGS")
WAIT_S = 20.0  # the longest a boundary waits for the helper's reading of a compiled step
_LOOK_S = 0.01


class OnRecompile:
    def __init__(self, proc_dir: str, mode: str, warmup: str) -> None:
        self.proc_dir = proc_dir
        self.mode = mode
        self.warmup = warmup
        self.verdict = os.path.join(proc_dir, fmt.VERDICT)
        self.seen = os.path.join(proc_dir, fmt.WATCHDOG_SEEN)
        self.raised = False
        self.quiet = False  # a journal step compiled nothing: the warm-up may be over
        self.awaited: int | None = None  # journal bytes the helper must have read before a boundary
        self.helper: subprocess.Popen[bytes] | None = None

    @staticmethod
    def from_env(proc_dir: str, environ: dict[str, str] | os._Environ[str]) -> OnRecompile | None:
        mode = environ.get("XLAGRAPH_ON_RECOMPILE", "").strip().lower()
        if mode not in ("warn", "raise"):
            if mode:
                why = f"XLAGRAPH_ON_RECOMPILE={mode!r} ignored (warn or raise)"
                print(f"xlagraph capture: {why}", file=sys.stderr)
            return None
        warmup = environ.get("XLAGRAPH_WARMUP", "").strip()
        return OnRecompile(proc_dir, mode, warmup if warmup.isdigit() else "auto")

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_NOT_INHERITED)}
        argv = [sys.executable, "-m", "xlagraph.report.watchdog", self.proc_dir, self.mode, self.warmup]
        self.helper = subprocess.Popen(
            [*argv, str(os.getpid())],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C of the run is the run's; the helper sees it gone
            close_fds=True,
        )

    def step_written(self, step: int, compiled: bool, journal_fd: int) -> None:
        """A journal step was written. A compiled one past what is surely warm-up makes the next
        boundary wait for the helper's reading (a journal step compiles no less than the user's
        step it belongs to, so these tests never skip one the helper would count)."""
        if not compiled:
            self.quiet = True
            return
        if self.mode != "raise" or self.raised:
            return
        warmup = int(self.warmup) if self.warmup.isdigit() else None
        if (warmup is not None and step <= warmup) or (warmup is None and not self.quiet):
            return
        try:
            self.awaited = os.fstat(journal_fd).st_size
        except OSError:
            self.awaited = None

    def check(self) -> None:
        """At a step boundary: raise the helper's verdict, once."""
        if self.mode != "raise" or self.raised:
            return
        if self.awaited is not None:
            self._wait(self.awaited)
            self.awaited = None
        if not os.path.exists(self.verdict):
            return
        try:
            with open(self.verdict, encoding="utf-8") as f:
                verdict: Any = json.load(f)
        except (OSError, ValueError):
            return
        self.raised = True
        step = verdict.get("step") if isinstance(verdict.get("step"), int) else None
        raise RecompileError(str(verdict.get("text", "recompiled after the warm-up")), step, self.proc_dir)

    def at_exit(self) -> None:
        """The run ended (its journal closed): a recompile on the last step had no boundary to stop
        at. Wait for the helper's reading; its line is on stderr, and this says the run had ended."""
        if self.mode != "raise" or self.raised or self.awaited is None:
            return
        try:  # the whole journal: the helper reads the run's end and tells all
            self._wait(os.path.getsize(os.path.join(self.proc_dir, fmt.JOURNAL)))
        except OSError:
            return
        if os.path.exists(self.verdict):
            why = "the recompile above was on the run's last step: the run had ended, nothing left to stop"
            print(f"xlagraph: XLAGRAPH_ON_RECOMPILE=raise: {why}", file=sys.stderr, flush=True)

    def _wait(self, size: int) -> None:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if os.path.exists(self.verdict) or self._seen() >= size:
                return
            if self.helper is not None and self.helper.poll() is not None:
                return  # (the helper stopped: nothing more will come)
            time.sleep(_LOOK_S)

    def _seen(self) -> int:
        try:
            with open(self.seen, encoding="ascii") as f:
                return int(f.read().strip() or -1)
        except (OSError, ValueError):
            return -1
