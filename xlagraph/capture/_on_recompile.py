"""`XLAGRAPH_ON_RECOMPILE=warn|raise`: the capturing side. A helper process does the analysis
(`report/watchdog.py`, started here at low priority with no capture of its own); this process
only looks, at each step boundary, for the helper's verdict file (`raise`) and raises
`RecompileError` with it. `XLAGRAPH_WARMUP=N` makes steps 0..N the warm-up (default: the
report's own warm-up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from xlagraph.capture import _format as fmt
from xlagraph.errors import RecompileError

__all__ = ["OnRecompile"]

# the capture's own settings: the helper must not capture itself, nor pay for torch_xla's debug
_NOT_INHERITED = ("XLAGRAPH_", "PT_XLA_DEBUG", "XLA_IR_DEBUG", "XLA_HLO_DEBUG", "XLA_FLAGS")


class OnRecompile:
    def __init__(self, proc_dir: str, mode: str, warmup: str) -> None:
        self.proc_dir = proc_dir
        self.mode = mode
        self.warmup = warmup
        self.verdict = os.path.join(proc_dir, fmt.VERDICT)
        self.raised = False
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

    def check(self) -> None:
        """At a step boundary: raise the helper's verdict, once."""
        if self.mode != "raise" or self.raised or not os.path.exists(self.verdict):
            return
        try:
            with open(self.verdict, encoding="utf-8") as f:
                verdict: Any = json.load(f)
        except (OSError, ValueError):
            return
        self.raised = True
        step = verdict.get("step") if isinstance(verdict.get("step"), int) else None
        raise RecompileError(str(verdict.get("text", "recompiled after the warm-up")), step, self.proc_dir)
