"""What a capture says about its process: meta.json's versions, host, argv and plan at start
(`process_meta`) and the line printed then (`start_message`); which torch_xla versions capture
supports; what still works when capture starts after torch_xla (`late_start`); and the meta.json
of a run dynamo alone recorded (no torch_xla: a CPU or GPU backend).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from dataclasses import replace
from typing import Any

from xlagraph.capture import _dynamo as dynamo
from xlagraph.capture import files as fmt
from xlagraph.capture._env import EnvPlan

__all__ = [
    "SUPPORTED",
    "dynamo_only_meta",
    "late_start",
    "live_dynamo_meta",
    "process_meta",
    "start_message",
    "supported",
]

SUPPORTED = ((2, 5), (2, 9))
DYNAMO_ONLY = "torch_xla was not imported: dynamo's record only"


def supported(version: str) -> bool:
    """Whether capture supports this torch_xla version (SUPPORTED, both ends included)."""
    try:
        major, minor = (int(p) for p in version.split("+")[0].split(".")[:2])
    except ValueError:
        return False
    return SUPPORTED[0] <= (major, minor) <= SUPPORTED[1]


def late_start(
    plan: EnvPlan, xlac: Any, debug_file_in_use: tuple[str, int] | None
) -> tuple[EnvPlan, list[str], bool]:
    """capture() entered after import torch_xla: keep what still works, say what does not.
    `debug_file_in_use`: where torch_xla writes PT_XLA_DEBUG since an earlier capture() in this
    process. Returns the plan, its notes and whether torch_xla's IR debug was turned on here."""
    notes: list[str] = []
    started = getattr(xlac, "_xla_runtime_is_initialized", lambda: True)
    if plan.hlo_dump and started():
        plan = replace(plan, hlo_dump=False)
        notes.append(
            "capture started after the torch_xla runtime: no HLO kept (XLA_FLAGS is read at its start)"
        )
    ran = (xlac._xla_counter_value("ExecuteComputation") or 0) > 0
    if ran and debug_file_in_use is not None:
        # torch_xla keeps writing where it first wrote: an earlier capture() in this process
        plan = replace(plan, debug_file=debug_file_in_use[0], debug_level=debug_file_in_use[1])
    elif ran:
        plan = replace(plan, debug_level=0)
        notes.append(
            "capture started after torch_xla ran graphs, so PT_XLA_DEBUG is off for this process: "
            "executions are counted per step but not identified"
        )
    ir_debug_set = False
    if plan.source_lines and hasattr(xlac, "_set_ir_debug") and not xlac._get_ir_debug():
        xlac._set_ir_debug(True)
        ir_debug_set = True
        notes.append("XLA_IR_DEBUG turned on at capture start: tensors created before it have no frames")
    return plan, notes, ir_debug_set


def live_dynamo_meta(plan: EnvPlan, started_by: str) -> bool:
    """The first call of a compiled function, torch_xla not imported: meta.json now (the run is
    live, `watch` follows dynamo's record; torch_xla imported later replaces it). False where
    the folder has one already."""
    os.makedirs(plan.proc_dir, exist_ok=True)
    if os.path.exists(os.path.join(plan.proc_dir, fmt.META)):
        return False
    from xlagraph.capture._journal import write_meta
    from xlagraph.capture.stored_sources import Relativizer, portable_meta

    meta = process_meta(None, plan, [DYNAMO_ONLY], started_by)
    paths = Relativizer.here()
    # the real cwd while it runs, as a torch_xla capture's meta.json has it: "." at its clean exit
    write_meta(plan.proc_dir, {**portable_meta(meta, plan.proc_dir, paths), "cwd": meta["cwd"]})
    return True


def dynamo_only_meta(plan: EnvPlan, started_by: str, live: bool) -> None:
    """At exit, no torch_xla in this process: the folder still says what ran (`live`: its
    meta.json was written at the first compiled call, and is replaced)."""
    meta_path = os.path.join(plan.proc_dir, fmt.META)
    if not os.path.isdir(plan.proc_dir) or (os.path.exists(meta_path) and not live):
        return
    from xlagraph.capture._journal import write_meta
    from xlagraph.capture.stored_sources import Relativizer, portable_meta

    meta = process_meta(None, plan, [DYNAMO_ONLY], started_by)
    paths = Relativizer.here()
    sites = [[paths(file), line, n] for file, line, n in dynamo.calls_by_site()]
    meta.update(end_time=time.time(), clean_exit=True, compiled_calls=dynamo.calls())
    meta["compiled_call_sites"] = sites
    write_meta(plan.proc_dir, portable_meta(meta, plan.proc_dir, paths))


def start_message(plan: EnvPlan) -> str:
    """What capture tells the user once torch_xla is hooked: where it writes, what it set."""
    turned_on = ", ".join(
        f"{k}={v}" for k, v in plan.set_vars.items() if k.startswith(("PT_XLA", "XLA_IR", "XLA_HLO"))
    )
    turned_on = turned_on.replace(f"={plan.debug_file}", "=<folder>/" + fmt.DEBUG_FILE)
    hint = {
        "auto": " (source lines until the run is steady and after each compile; XLAGRAPH_SOURCE_LINES="
        "always keeps them, 0 turns them off)",
        "always": " (XLAGRAPH_SOURCE_LINES=auto keeps them only until the run is steady, 0 turns them off)",
    }.get(plan.source_lines_mode, "")
    return (
        f"writing {plan.proc_dir}; set {turned_on}"
        f"{', --xla_dump_to=<folder>/hlo' if plan.hlo_dump else ''}{hint}"
    )


def process_meta(module: Any, plan: EnvPlan, notes: list[str], started_by: str) -> dict[str, Any]:
    """meta.json's fields at capture start; `module` is torch_xla, or None where it is not imported."""
    from importlib import metadata

    try:
        version = metadata.version("xlagraph")
    except metadata.PackageNotFoundError:
        version = "unknown"
    torch = sys.modules.get("torch")
    start = time.time()
    return {
        "format": fmt.FORMAT,
        "format_version": fmt.VERSION,
        "xlagraph": version,
        "torch_xla": str(getattr(module, "__version__", "")) if module is not None else "",
        "torch": str(getattr(torch, "__version__", "")),
        "python": sys.version.split()[0],
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "rank": None,
        "world_size": None,
        "argv": list(sys.argv),
        "cwd": os.getcwd(),
        "start_time": start,
        "start_iso": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(start)),
        "started_by": started_by,
        "env_set": {k: v for k, v in plan.set_vars.items() if not k.startswith("_")},
        "debug_level": plan.debug_level,
        "source_lines": plan.source_lines,
        "source_lines_mode": plan.source_lines_mode,
        "hlo_dump": plan.hlo_dump,
        "notes": notes,
    }
