"""Switching capture on: environment first, then the step-marker hook once torch_xla is imported
(why the hook swaps `torch_xla._XLAC` instead of wrapping the marker: docs/development.md,
"Capture, inside")."""

from __future__ import annotations

import atexit
import os
import socket
import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from xlagraph.capture import _dynamo as dynamo
from xlagraph.capture._env import EnvPlan, plan_env, process_dir_name, truthy
from xlagraph.capture._import_hook import spec_then
from xlagraph.capture._mark_sharding import SHARDING_MODULE, unwrap_mark_sharding, wrap_mark_sharding
from xlagraph.capture._on_recompile import OnRecompile
from xlagraph.capture._process_meta import (
    SUPPORTED,
    dynamo_only_meta,
    late_start,
    live_dynamo_meta,
    process_meta,
    start_message,
    supported,
)

__all__ = ["capture", "start_from_env"]

PREFIX = "xlagraph capture:"
_FINGERPRINTS, _ZOOM = "xlagraph.capture._fingerprint_capture", "xlagraph.capture._zoom"  # imported if on

_plan: EnvPlan | None = None  # planned, waiting for torch_xla
_started_by = ""
_recorder: Any = None  # the Recorder, once torch_xla is imported
_dynamo_live = False  # no torch_xla: meta.json written at the first compiled call
_dynamo_watchdog: tuple[int, OnRecompile] | None = None  # (its process, the helper) without torch_xla
_real_xlac: Any = None  # the real torch_xla._XLAC while the proxy stands in for it
_debug_file_in_use: tuple[str, int] | None = None  # torch_xla reads PT_XLA_DEBUG_FILE once per process
_process_hooks = False  # atexit and fork handlers, registered once
_ir_debug_set = False  # capture() turned torch_xla's IR debug on at run time: turn it off again


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
    if truthy(environ.get("XLAGRAPH_FINGERPRINTS")):  # also plain PyTorch; imported only then (start-up)
        from xlagraph.capture import _fingerprint_capture as fp_capture
        from xlagraph.capture import _zoom as zoom
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
    unwrap_mark_sharding()
    for side in (_ZOOM, _FINGERPRINTS):  # armed only if imported
        if side in sys.modules:
            sys.modules[side].disarm()
    dynamo.disarm()
    if plan is not None:
        _restore_env(plan)
    _plan, _recorder = None, None


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
    wrap_mark_sharding(module, lambda: _recorder)


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
    global _recorder, _debug_file_in_use, _ir_debug_set
    plan = _plan
    if plan is None or _recorder is not None:
        return
    version = str(getattr(module, "__version__", "?"))
    if not supported(version):
        (a, b), (c, d) = SUPPORTED
        note = f"torch_xla {version} is not supported ({a}.{b} – {c}.{d}): capture is off"
        print(f"{PREFIX} {note}", file=sys.stderr, flush=True)
        _restore_env(plan)
        return
    from xlagraph.capture._recorder import Recorder, Settings

    xlac = _real_xlac if _real_xlac is not None else module._XLAC
    import torch_xla.core.xla_model as xm

    notes: list[str] = []
    if late:
        plan, notes, ir_debug_set = late_start(plan, xlac, _debug_file_in_use)
        _ir_debug_set = _ir_debug_set or ir_debug_set
    meta = process_meta(module, plan, notes, _started_by)
    rec = Recorder(plan, xlac, Settings.from_env(os.environ), meta, xm.add_step_closure)
    _recorder = rec
    if _dynamo_watchdog is not None and _dynamo_watchdog[0] == os.getpid():
        rec.on_recompile = _dynamo_watchdog[1]  # (started at the first compiled call: the same helper)
    elif (on_recompile := OnRecompile.from_env(plan.proc_dir, os.environ)) is not None:
        _guarded(on_recompile.start)
        rec.on_recompile = on_recompile
    if _FINGERPRINTS in sys.modules:
        sys.modules[_FINGERPRINTS].attach(rec)
    if _debug_file_in_use is None:
        _debug_file_in_use = (plan.debug_file, plan.debug_level)
    _install_proxy(module, xlac)
    _hook_process()
    print(f"{PREFIX} {start_message(plan)}", file=sys.stderr, flush=True)


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
    if not live_dynamo_meta(plan, _started_by):
        return
    on_recompile = OnRecompile.from_env(plan.proc_dir, os.environ)
    if on_recompile is not None:
        on_recompile.start()
        _dynamo_watchdog = (os.getpid(), on_recompile)


def _dynamo_only_meta() -> None:
    """No torch_xla in this process (a CPU or GPU backend): the folder still says what ran."""
    plan = _plan
    assert plan is not None
    dynamo.disarm()
    dynamo_only_meta(plan, _started_by, _dynamo_live)


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
