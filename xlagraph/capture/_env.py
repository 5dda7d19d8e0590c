"""Which environment variables capture sets, decided before torch_xla is imported. Pure.

torch_xla reads its debug settings once: `XLA_FLAGS` when its PJRT client starts,
`PT_XLA_DEBUG_LEVEL` / `PT_XLA_DEBUG_FILE` / `PT_XLA_DEBUG_MAX_FRAME` at its first graph
execution (function-local statics in debug_util.cpp, verified with 2.9), `XLA_IR_DEBUG` at
import. So they are set at interpreter start by the `.pth` hook, and a child process (which
inherits them) re-plans: what a parent's capture set is recorded in `ENV_MARK` and replaced,
so two processes never share a dump directory or a debug file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from xlagraph.capture.files import DEBUG_FILE, HLO_DIR

__all__ = ["ENV_MARK", "EnvPlan", "env_number", "plan_env", "process_dir_name", "source_lines_mode", "truthy"]

N = TypeVar("N", int, float)
D = TypeVar("D")

ENV_MARK = "_XLAGRAPH_CAPTURE_ENV"  # JSON {var: value capture set}; XLA_FLAGS: the fragment added
MAX_FRAMES = "32"  # torch_xla's default of 8 often stops inside library code
_DUMP_FLAG = re.compile(r"(?:^|\s)--?xla_dump_to=(\S*)")


@dataclass(frozen=True)
class EnvPlan:
    """What to set, and what it means for the capture."""

    proc_dir: str
    debug_file: str  # where torch_xla writes PT_XLA_DEBUG output
    set_vars: dict[str, str]  # full values to put in os.environ
    restore: dict[str, str | None]  # previous values, to undo `set_vars`
    debug_level: int  # the PT_XLA_DEBUG level torch_xla will use
    forward_debug: str | None  # user asked for PT_XLA_DEBUG output: their file, "" for stderr
    hlo_dump: bool
    source_lines: bool
    notes: tuple[str, ...]
    source_lines_mode: str = "auto"  # the recorder turns XLA_IR_DEBUG off in steady state; always; off

    @property
    def hlo_dir(self) -> str:
        return os.path.join(self.proc_dir, HLO_DIR)


def process_dir_name(host: str, pid: int) -> str:
    return f"{host}-{pid}"


def plan_env(environ: Mapping[str, str], proc_dir: str) -> EnvPlan:
    """The variables to set for a process capturing into `proc_dir` (`DIR/<host>-<pid>`)."""
    user = _user_view(environ)
    owned: dict[str, str] = {}
    set_vars: dict[str, str] = {}
    notes: list[str] = []

    flags = user.get("XLA_FLAGS", "")
    dump = _DUMP_FLAG.search(flags)
    hlo_dump = False
    if dump is not None:
        notes.append(
            f"XLA_FLAGS already has --xla_dump_to={dump.group(1)}: capture leaves it and keeps no HLO"
        )
    elif any(c.isspace() for c in proc_dir):
        notes.append(f"no HLO kept: the capture path {proc_dir!r} has blanks, which XLA_FLAGS cannot carry")
    else:
        fragment = f"--xla_dump_to={os.path.join(proc_dir, HLO_DIR)} --xla_dump_hlo_as_text"
        owned["XLA_FLAGS"] = fragment
        set_vars["XLA_FLAGS"] = f"{flags} {fragment}".strip()
        hlo_dump = True

    forward: str | None = None
    if user.get("PT_XLA_DEBUG_LEVEL") or user.get("PT_XLA_DEBUG"):
        level = env_number(user, "PT_XLA_DEBUG_LEVEL", 100 if truthy(user.get("PT_XLA_DEBUG")) else 0, int)
        forward = user.get("PT_XLA_DEBUG_FILE", "")
        notes.append(
            f"PT_XLA_DEBUG set by the user (level {level}): capture keeps it and forwards its output"
        )
        if level < 2:
            notes.append(
                f"PT_XLA_DEBUG level {level} reports compiles only: cache hits and implicit syncs "
                "are counted but not identified"
            )
    else:
        level = 2
        owned["PT_XLA_DEBUG_LEVEL"] = set_vars["PT_XLA_DEBUG_LEVEL"] = "2"
    debug_file = os.path.join(proc_dir, DEBUG_FILE)
    owned["PT_XLA_DEBUG_FILE"] = set_vars["PT_XLA_DEBUG_FILE"] = debug_file
    if not user.get("PT_XLA_DEBUG_MAX_FRAME"):
        owned["PT_XLA_DEBUG_MAX_FRAME"] = set_vars["PT_XLA_DEBUG_MAX_FRAME"] = MAX_FRAMES

    lines_mode = source_lines_mode(environ.get("XLAGRAPH_SOURCE_LINES", ""))
    source_lines = lines_mode != "off"
    if source_lines:
        for var in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG"):
            if var in user:
                notes.append(f"{var}={user[var]} set by the user: capture keeps it")
            else:
                owned[var] = set_vars[var] = "1"
        source_lines = truthy(user.get("XLA_IR_DEBUG", "1")) or truthy(user.get("XLA_HLO_DEBUG", "1"))

    set_vars[ENV_MARK] = json.dumps(owned, sort_keys=True)
    restore = {var: environ.get(var) for var in set_vars}
    if lines_mode == "auto" and not ("XLA_IR_DEBUG" in owned and "XLA_HLO_DEBUG" in owned):
        lines_mode = "always"  # the user set one of them: capture does not switch it
    return EnvPlan(
        proc_dir,
        debug_file,
        set_vars,
        restore,
        level,
        forward,
        hlo_dump,
        source_lines,
        tuple(notes),
        lines_mode if source_lines else "off",
    )


def source_lines_mode(value: str) -> str:
    """`XLAGRAPH_SOURCE_LINES`: `auto` (the default), `always` (also `1`, `on`) or `off` (`0`).

    torch_xla records a line by walking the Python stack for every IR node it creates, every step
    (+50% on a short step). `auto` records them only where a graph can be new: until the run is
    steady and after each compile. A graph that first compiles after that (a ragged batch at the
    end of an epoch, clipping every 100 steps) is traced without them; lines then stay on until
    it runs again, and that run is lowered with its lines (see the recorder)."""
    v = value.strip().lower()
    if v in ("0", "false", "no", "off"):
        return "off"
    if v in ("always", "1", "true", "yes", "on"):
        return "always"
    return "auto"


def _user_view(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment as the user set it: what a parent process's capture set is taken out."""
    env = dict(environ)
    try:
        owned = json.loads(environ.get(ENV_MARK, "") or "{}")
    except ValueError:
        owned = {}
    for var, value in owned.items() if isinstance(owned, dict) else ():
        if var == "XLA_FLAGS":
            flags = env.get(var, "").replace(value, " ")
            env[var] = " ".join(flags.split())
        elif env.get(var) == value:
            del env[var]
    return env


def truthy(value: str | None) -> bool:
    """A switch of the environment: on unless unset, empty, 0, false, no or off."""
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


def env_number(environ: Mapping[str, str], key: str, default: D, parse: Callable[[str], N]) -> N | D:
    """`parse(environ[key])`, or `default` where it is unset, empty or not a number: a typo in an
    environment variable must not stop a training run or its capture."""
    value = environ.get(key, "")
    try:
        return parse(value) if value else default
    except ValueError:
        return default
