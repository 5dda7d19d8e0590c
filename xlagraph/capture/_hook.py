"""Switching capture on: environment first, then the step-marker hook once torch_xla is imported.

`start_from_env` runs at interpreter start (the `.pth` file) when `XLAGRAPH_CAPTURE` is set; the
`capture()` context manager does the same from Python. Both set torch_xla's debug variables, then
wait for `import torch_xla` (a one-shot `sys.meta_path` finder wraps the module's loader).

The hook must not add a Python frame around the step marker: torch_xla names the cause of an
execution from the innermost Python frames (`sync` in torch_xla.py, then `next` in
parallel_loader.py, `_compile`, ...), and a wrapper function there turns every sync into "most
likely user code trying to access tensor value". So `torch_xla._XLAC` (which mark_step,
torch_xla.sync, torch_xla.compile and the parallel loaders look up at call time) is replaced by
a copy of the module without `_xla_step_marker`: the module `__getattr__` that then answers the
lookup runs the "before" half and hands back the original C function, which the caller calls
from its own frame. The "after" half is a step closure, which `sync()` runs right after the
marker (`xm._run_step_closures`, 2.5 – 2.9).

Nothing here may break the user's program: every capture step is guarded, an error is logged
once and capture turns itself off while the original step marker keeps working.
"""

from __future__ import annotations

import atexit
import functools
import os
import socket
import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import replace
from typing import Any

from xlagraph.capture import _dynamo as dynamo
from xlagraph.capture import _fingerprint_capture as fp_capture
from xlagraph.capture import _zoom as zoom
from xlagraph.capture import files as fmt
from xlagraph.capture._env import EnvPlan, plan_env, process_dir_name
from xlagraph.capture._import_hook import spec_then
from xlagraph.capture._on_recompile import OnRecompile

__all__ = ["capture", "start_from_env"]

SUPPORTED = ((2, 5), (2, 9))
PREFIX = "xlagraph capture:"

_plan: EnvPlan | None = None  # planned, waiting for torch_xla
_started_by = ""
_recorder: Any = None  # the Recorder, once torch_xla is imported
_DYNAMO_ONLY = "torch_xla was not imported: dynamo's record only"
_dynamo_live = False  # no torch_xla: meta.json written at the first compiled call
_dynamo_watchdog: tuple[int, OnRecompile] | None = None  # (its process, the helper) without torch_xla
_real_xlac: Any = None  # the real torch_xla._XLAC while the proxy stands in for it
_debug_file_in_use: tuple[str, int] | None = None  # torch_xla reads PT_XLA_DEBUG_FILE once per process
_process_hooks = False  # atexit and fork handlers, registered once
_ir_debug_set = False  # capture() turned torch_xla's IR debug on at run time: turn it off again
_real_mark_sharding: tuple[Any, Any] | None = None  # (xla_sharding module, its mark_sharding)


def start_from_env() -> None:
    """`XLAGRAPH_CAPTURE=DIR`: plan and set the environment, hook torch_xla when it is imported."""
    directory = os.environ.get("XLAGRAPH_CAPTURE", "")
    if not directory or _plan is not None:
        return
    directory = os.path.abspath(directory)
    os.environ["XLAGRAPH_CAPTURE"] = directory  # children that chdir still agree
    _start(directory, "XLAGRAPH_CAPTURE", dict(os.environ))


@contextmanager
def capture(directory: str | os.PathLike[str], source_lines: bool | None = None) -> Iterator[str]:
    """Capture the torch_xla steps run inside the block into `directory`; yields the process folder.

    Best entered before `import torch_xla`: torch_xla reads its dump and debug settings once, so
    entered later the capture keeps no HLO (runtime already started) or cannot name the graphs
    executed (graphs already ran), and says so in the folder's notes.
    """
    global _plan
    if _plan is not None:
        print(
            f"{PREFIX} already capturing into {_plan.proc_dir}; the inner capture() adds nothing",
            file=sys.stderr,
        )
        yield _plan.proc_dir
        return
    environ = dict(os.environ)
    if source_lines is not None:
        environ["XLAGRAPH_SOURCE_LINES"] = "1" if source_lines else "0"
    plan = _start(os.path.abspath(os.fspath(directory)), "api", environ)
    try:
        yield plan.proc_dir
    finally:
        _stop()


def _start(directory: str, started_by: str, environ: dict[str, str]) -> EnvPlan:
    global _plan, _started_by
    base = os.path.join(directory, process_dir_name(socket.gethostname(), os.getpid()))
    proc_dir, n = base, 1
    # Taken already: a second capture() in this process, or an earlier run that had the same host
    # and pid (a container restarted in place). Each run gets its own folder.
    while os.path.exists(proc_dir):
        n += 1
        proc_dir = f"{base}.{n}"
    plan = plan_env(environ, proc_dir)
    os.environ.update(plan.set_vars)
    _plan, _started_by = plan, started_by
    if fp_capture.enabled(environ):  # XLAGRAPH_FINGERPRINTS=1: also plain PyTorch, no torch_xla
        from xlagraph.capture._settings import Settings

        _guarded(lambda: fp_capture.arm(proc_dir, Settings.from_env(environ).max_bytes))
        _guarded(lambda: zoom.arm(proc_dir, environ))  # XLAGRAPH_ZOOM=K: diverge's second pass
    if "torch" in sys.modules:
        _guarded(_on_torch)
    module = sys.modules.get("torch_xla")
    if module is not None and hasattr(module, "_XLAC"):
        _guarded(lambda: _on_torch_xla(module, late=True))
    sharding = sys.modules.get(SHARDING_MODULE)
    if sharding is not None:
        _guarded(lambda: _wrap_mark_sharding(sharding))
    else:
        sys.meta_path.insert(0, _TorchXlaFinder())
    return plan


def _stop() -> None:
    """End of `capture()`: close the journal, unhook, give the environment back."""
    global _plan, _recorder
    rec, plan = _recorder, _plan
    _remove_finder()
    _finish(rec)
    if _ir_debug_set:
        _guarded(_reset_ir_debug)
    _unhook()
    _unwrap_mark_sharding()
    zoom.disarm()
    fp_capture.disarm()
    dynamo.disarm()
    if plan is not None:
        _restore_env(plan)
    _plan, _recorder = None, None


SHARDING_MODULE = "torch_xla.distributed.spmd.xla_sharding"


class _TorchXlaFinder:
    """Post-import hook: find torch_xla (and its SPMD sharding module) with the other finders,
    run our code after each is executed. Removed once both are hooked."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name == "torch_xla":
            after: Callable[[Any], None] = lambda module: _on_torch_xla(module, late=False)  # noqa: E731
        elif name == "torch" and not dynamo.armed():
            after = lambda module: _on_torch()  # noqa: E731
        elif name == SHARDING_MODULE:
            after = _wrap_mark_sharding
        else:
            return None
        with _finder_removed(self, keep=name != SHARDING_MODULE):
            return spec_then(name, path, target, lambda module: _guarded(lambda: after(module)))


@contextmanager
def _finder_removed(finder: Any, keep: bool) -> Iterator[None]:
    """The other finders answer while this one is out of sys.meta_path (no recursion); it goes
    back (`keep`) while the sharding module is still to come."""
    index = sys.meta_path.index(finder) if finder in sys.meta_path else 0
    _remove_finder()
    try:
        yield
    finally:
        if keep and _plan is not None:
            sys.meta_path.insert(index, finder)


def _wrap_mark_sharding(module: Any) -> None:
    """Record each `mark_sharding(t, mesh, spec)` call: the only place the user's mesh axes and
    line are known; the HLO has `{devices=[4,1]0,1,2,3}` only. One wrapper frame is harmless here
    (mark_sharding is not a sync, torch_xla names nothing from its frames)."""
    global _real_mark_sharding
    real = getattr(module, "mark_sharding", None)
    if real is None or getattr(real, "_xlagraph_wrapped", False):
        return

    @functools.wraps(real)
    def mark_sharding(t: Any, mesh: Any, partition_spec: Any, *args: Any, **kwargs: Any) -> Any:
        result = real(t, mesh, partition_spec, *args, **kwargs)
        rec = _recorder
        if rec is not None and rec.active:
            caller = sys._getframe(1)
            rec.guard(lambda: rec.record_mark_sharding(t, mesh, partition_spec, caller))
        return result

    mark_sharding._xlagraph_wrapped = True  # type: ignore[attr-defined]
    _real_mark_sharding = (module, real)
    module.mark_sharding = mark_sharding
    package = sys.modules.get(SHARDING_MODULE.rpartition(".")[0])  # imported before us: re-export
    if package is not None and getattr(package, "mark_sharding", None) is real:
        package.mark_sharding = mark_sharding


def _unwrap_mark_sharding() -> None:
    global _real_mark_sharding
    if _real_mark_sharding is None:
        return
    module, real = _real_mark_sharding
    package = sys.modules.get(SHARDING_MODULE.rpartition(".")[0])
    for owner in (module, package):
        if owner is not None and getattr(getattr(owner, "mark_sharding", None), "_xlagraph_wrapped", False):
            owner.mark_sharding = real
    _real_mark_sharding = None


def _remove_finder() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _TorchXlaFinder)]


_perf0 = time.perf_counter()


def _step_of() -> tuple[int | None, float]:
    """For dynamo's events: the journal step being built, and the seconds since capture began."""
    rec = _recorder
    if rec is not None:
        return rec.s.step, time.perf_counter() - rec.t0
    # no torch_xla: a step is a call of a compiled function from the loop's line
    return dynamo.loop_step(), time.perf_counter() - _perf0


def _on_call() -> None:
    """An outermost call of a compiled function: a step boundary where the user never syncs."""
    rec = _recorder
    if rec is not None:
        rec.guard(rec.call_boundary)
        if rec.on_recompile is not None and rec.pid == os.getpid():
            rec.on_recompile.check()
        return
    if _plan is None:
        return
    if not _dynamo_live:  # no torch_xla (yet): the folder says so from the first call, for `watch`
        _guarded(_start_dynamo_only)
    if _dynamo_watchdog is not None and _dynamo_watchdog[0] == os.getpid():
        _dynamo_watchdog[1].check()  # XLAGRAPH_ON_RECOMPILE=raise: the run stops here


def _on_torch() -> None:
    """torch is imported: keep dynamo's record (any backend, torch_xla or not)."""
    plan = _plan
    if plan is None:
        return
    dynamo.arm(plan.proc_dir, dict(os.environ), _step_of, _on_call)
    _hook_process()


def _hook_process() -> None:
    """The exit and fork handlers, registered once for the process."""
    global _process_hooks
    if not _process_hooks:
        _process_hooks = True
        atexit.register(_at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork)


def _on_torch_xla(module: Any, late: bool) -> None:
    """torch_xla is imported: check its version, create the recorder, patch the step marker."""
    global _recorder, _debug_file_in_use
    plan = _plan
    if plan is None or _recorder is not None:
        return
    version = str(getattr(module, "__version__", "?"))
    if not _supported(version):
        (a, b), (c, d) = SUPPORTED
        print(
            f"{PREFIX} torch_xla {version} is not supported ({a}.{b} – {c}.{d}): capture is off",
            file=sys.stderr,
            flush=True,
        )
        _restore_env(plan)
        return
    from xlagraph.capture._recorder import Recorder, Settings

    xlac = _real_xlac if _real_xlac is not None else module._XLAC
    import torch_xla.core.xla_model as xm

    notes: list[str] = []
    if late:
        plan, notes = _late_start(plan, xlac)
    meta = _meta(module, plan, notes)
    rec = Recorder(plan, xlac, Settings.from_env(os.environ), meta, xm.add_step_closure)
    _recorder = rec
    if _dynamo_watchdog is not None and _dynamo_watchdog[0] == os.getpid():
        rec.on_recompile = _dynamo_watchdog[1]  # (started at the first compiled call: the same helper)
    elif (on_recompile := OnRecompile.from_env(plan.proc_dir, os.environ)) is not None:
        _guarded(on_recompile.start)
        rec.on_recompile = on_recompile
    fp_capture.attach(rec)
    if _debug_file_in_use is None:
        _debug_file_in_use = (plan.debug_file, plan.debug_level)
    _install_proxy(module, xlac)
    _hook_process()
    turned_on = ", ".join(
        f"{k}={v}" for k, v in plan.set_vars.items() if k.startswith(("PT_XLA", "XLA_IR", "XLA_HLO"))
    )
    turned_on = turned_on.replace(f"={plan.debug_file}", "=<folder>/" + fmt.DEBUG_FILE)
    hint = {
        "auto": " (source lines until the run is steady and after each compile; XLAGRAPH_SOURCE_LINES="
        "always keeps them, 0 turns them off)",
        "always": " (XLAGRAPH_SOURCE_LINES=auto keeps them only until the run is steady, 0 turns them off)",
    }.get(plan.source_lines_mode, "")
    print(
        f"{PREFIX} writing {plan.proc_dir}; set {turned_on}"
        f"{', --xla_dump_to=<folder>/hlo' if plan.hlo_dump else ''}{hint}",
        file=sys.stderr,
        flush=True,
    )


def _late_start(plan: EnvPlan, xlac: Any) -> tuple[EnvPlan, list[str]]:
    """capture() entered after import torch_xla: keep what still works, say what does not."""
    notes: list[str] = []
    started = getattr(xlac, "_xla_runtime_is_initialized", lambda: True)
    if plan.hlo_dump and started():
        plan = replace(plan, hlo_dump=False)
        notes.append(
            "capture started after the torch_xla runtime: no HLO kept (XLA_FLAGS is read at its start)"
        )
    ran = (xlac._xla_counter_value("ExecuteComputation") or 0) > 0
    if ran and _debug_file_in_use is not None:
        # torch_xla keeps writing where it first wrote: an earlier capture() in this process
        plan = replace(plan, debug_file=_debug_file_in_use[0], debug_level=_debug_file_in_use[1])
    elif ran:
        plan = replace(plan, debug_level=0)
        notes.append(
            "capture started after torch_xla ran graphs, so PT_XLA_DEBUG is off for this process: "
            "executions are counted per step but not identified"
        )
    global _ir_debug_set
    if plan.source_lines and hasattr(xlac, "_set_ir_debug") and not xlac._get_ir_debug():
        xlac._set_ir_debug(True)
        _ir_debug_set = True
        notes.append("XLA_IR_DEBUG turned on at capture start: tensors created before it have no frames")
    return plan, notes


def active_capture() -> tuple[str, int] | None:
    """(the process folder, the journal step being built) of this process's capture, if any:
    what the pytest plugin reads to explain a budget that failed."""
    rec = _recorder
    if rec is None or not rec.active or rec.pid != os.getpid():
        return None
    return rec.dir, rec.s.step


def _reset_ir_debug() -> None:
    global _ir_debug_set
    _ir_debug_set = False
    module = sys.modules.get("torch_xla")
    xlac = _real_xlac if _real_xlac is not None else getattr(module, "_XLAC", None)
    if xlac is not None:
        xlac._set_ir_debug(False)


def _install_proxy(module: Any, xlac: Any) -> None:
    global _real_xlac
    if _real_xlac is not None:
        return
    proxy = types.ModuleType(xlac.__name__, xlac.__doc__)
    proxy.__dict__.update(xlac.__dict__)
    del proxy.__dict__["_xla_step_marker"]
    proxy.__dict__["__getattr__"] = _xlac_getattr
    proxy.__dict__["__dir__"] = lambda: dir(xlac)
    _real_xlac = xlac
    module._XLAC = proxy


def _xlac_getattr(name: str) -> Any:
    """`torch_xla._XLAC.<name>` for names the proxy does not hold: the step marker, and anything
    torch_xla added to its module later."""
    real = _real_xlac
    if name == "_xla_step_marker":
        rec = _recorder
        if rec is not None and rec.active and rec.pid == os.getpid():
            rec.guard(rec.before_marker)
            if rec.on_recompile is not None:
                rec.on_recompile.check()  # XLAGRAPH_ON_RECOMPILE=raise: the run stops here
    return getattr(real, name)


def _guarded(fn: Callable[[], Any]) -> None:
    """Before a recorder exists: an error switches capture off for this process."""
    try:
        fn()
    except Exception as e:
        print(f"{PREFIX} disabled after error: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        if _recorder is not None:
            _recorder.active = False
        _unhook()
        _restore_env_quietly()


def _finish(rec: Any) -> None:
    """Close this process's journal, then tell the XLAGRAPH_ON_RECOMPILE helper."""
    if rec is not None and rec.active and rec.pid == os.getpid():
        rec.guard(rec.finish)
        if rec.on_recompile is not None:  # (after finish: the recorder is inactive, its journal whole)
            with suppress(Exception):
                rec.on_recompile.at_exit()


def _at_exit() -> None:
    rec = _recorder
    _finish(rec)
    if rec is None and _plan is not None and dynamo.armed():
        _guarded(_dynamo_only_meta)


def _start_dynamo_only() -> None:
    """The first call of a compiled function, torch_xla not imported: meta.json now (the run is
    live, `watch` follows dynamo's record; torch_xla imported later replaces it), and the
    XLAGRAPH_ON_RECOMPILE helper."""
    global _dynamo_live, _dynamo_watchdog
    _dynamo_live = True
    plan = _plan
    assert plan is not None
    os.makedirs(plan.proc_dir, exist_ok=True)
    if os.path.exists(os.path.join(plan.proc_dir, fmt.META)):
        return
    from xlagraph.capture._journal import write_meta
    from xlagraph.capture.stored_sources import Relativizer, portable_meta

    meta = _meta(None, plan, [_DYNAMO_ONLY])
    paths = Relativizer.here()
    # the real cwd while it runs, as a torch_xla capture's meta.json has it: "." at its clean exit
    write_meta(plan.proc_dir, {**portable_meta(meta, plan.proc_dir, paths), "cwd": meta["cwd"]})
    on_recompile = OnRecompile.from_env(plan.proc_dir, os.environ)
    if on_recompile is not None:
        on_recompile.start()
        _dynamo_watchdog = (os.getpid(), on_recompile)


def _dynamo_only_meta() -> None:
    """No torch_xla in this process (a CPU or GPU backend): the folder still says what ran."""
    plan = _plan
    assert plan is not None
    dynamo.disarm()
    meta_path = os.path.join(plan.proc_dir, fmt.META)
    if not os.path.isdir(plan.proc_dir) or (os.path.exists(meta_path) and not _dynamo_live):
        return
    from xlagraph.capture._journal import write_meta
    from xlagraph.capture.stored_sources import Relativizer, portable_meta

    meta = _meta(None, plan, [_DYNAMO_ONLY])
    paths = Relativizer.here()
    sites = [[paths(file), line, n] for file, line, n in dynamo.calls_by_site()]
    meta.update(end_time=time.time(), clean_exit=True, compiled_calls=dynamo.calls())
    meta["compiled_call_sites"] = sites
    write_meta(plan.proc_dir, portable_meta(meta, plan.proc_dir, paths))


def _after_fork() -> None:
    # A forked child shares the parent's folder: it must not write there.
    rec = _recorder
    if rec is not None:
        rec.active = False


def _unhook() -> None:
    global _real_xlac
    module = sys.modules.get("torch_xla")
    if module is not None and _real_xlac is not None:
        module._XLAC = _real_xlac
        _real_xlac = None


def _restore_env(plan: EnvPlan) -> None:
    for var, value in plan.restore.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value


def _restore_env_quietly() -> None:
    if _plan is not None:
        with suppress(Exception):
            _restore_env(_plan)


def _supported(version: str) -> bool:
    try:
        major, minor = (int(p) for p in version.split("+")[0].split(".")[:2])
    except ValueError:
        return False
    return SUPPORTED[0] <= (major, minor) <= SUPPORTED[1]


def _meta(module: Any, plan: EnvPlan, notes: list[str]) -> dict[str, Any]:
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
        "started_by": _started_by,
        "env_set": {k: v for k, v in plan.set_vars.items() if not k.startswith("_")},
        "debug_level": plan.debug_level,
        "source_lines": plan.source_lines,
        "source_lines_mode": plan.source_lines_mode,
        "hlo_dump": plan.hlo_dump,
        "notes": notes,
    }
