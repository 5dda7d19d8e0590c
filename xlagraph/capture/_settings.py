"""The recorder's knobs, read once from the environment (`XLAGRAPH_*`) when capture starts.

A bad value falls back to the default (`_env.env_number`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from xlagraph.capture._env import env_number

__all__ = ["STEADY_MARKERS", "Settings"]

# Source lines (XLAGRAPH_SOURCE_LINES=auto, the default): torch_xla records them while it traces, so
# they are on while graphs still change and off once the run replays cached graphs.
STEADY_MARKERS = 8  # markers without a compile before source lines go off (XLAGRAPH_STEADY_STEPS)


@dataclass(frozen=True)
class Settings:
    """The knobs read from the environment (`XLAGRAPH_*`)."""

    max_bytes: int = 200 * 2**20
    report_mode: str = "auto"  # auto | always | never
    fail_after: int = 0  # test hook: raise inside the hook at this marker (0: never)
    steady_markers: int = STEADY_MARKERS
    compress: bool = True  # the dumps stored as .xz at a clean exit (XLAGRAPH_COMPRESS=0: plain text)

    @staticmethod
    def from_env(environ: dict[str, str] | os._Environ[str]) -> Settings:
        mode = environ.get("XLAGRAPH_TENSORS_REPORT", "auto").strip().lower()
        mode = {"1": "always", "0": "never", "off": "never", "on": "always"}.get(mode, mode)
        max_mb = env_number(environ, "XLAGRAPH_MAX_MB", 200.0, float)
        fail_after = env_number(environ, "XLAGRAPH_CAPTURE_FAIL_AFTER", 0, int)
        steady = max(1, env_number(environ, "XLAGRAPH_STEADY_STEPS", STEADY_MARKERS, int))
        compress = environ.get("XLAGRAPH_COMPRESS", "1").strip().lower() not in ("0", "off", "no", "false")
        return Settings(
            max_bytes=int(max_mb * 2**20),
            report_mode=mode if mode in ("auto", "always", "never") else "auto",
            fail_after=fail_after,
            steady_markers=steady,
            compress=compress,
        )
