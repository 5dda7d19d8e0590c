"""`XLAGRAPH_FINGERPRINTS=1` beside `XLAGRAPH_CAPTURE=DIR`: bit fingerprints of every step's
tensors, named as the user names them, with no code change.

What a step is (an optimizer step: global `torch.optim` step hooks), which tensors are recorded
under which names, and when they are computed and fetched (CUDA and CPU at the step hook, fetched
one step later; XLA after the step's sync, held by weak reference until then, in a graph of their
own: `_fingerprint_xla`) are docs/divergence.md ("Capture").

Per step the hooks do little Python work per tensor: each optimizer's names (as `Slot`s, which
remember their name id) are worked out once and again only when its parameters change, so a
step looks up `.grad` and the state and makes one weak reference per tensor.

The names are `_fingerprint_names`', the files `_fingerprint_writer`'s.

Never breaks training: every hook body is guarded; the first error is printed once and written
to fingerprints.jsonl, and fingerprints stop (the rest of the capture goes on).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from xlagraph.capture._fingerprint_names import OptimizerPlan, Slot, optimizer_plan
from xlagraph.capture._fingerprint_writer import FingerprintWriter
from xlagraph.capture._import_hook import AfterImport

__all__ = ["arm", "attach", "current", "disarm"]

MAX_IO_TENSORS = 16  # input and output tensors kept per step
PREFIX = "xlagraph fingerprints:"
FETCH_EVERY = 32  # XLA: the fingerprint tables of this many steps are fetched in one call...
FETCH_SECONDS = 1.0  # ...or fewer, once the oldest is this old (a killed run loses at most these)

_cap: _Capture | None = None


def arm(proc_dir: str, max_bytes: int) -> None:
    """Capture started with fingerprints on: hook torch now, or when it is imported."""
    global _cap
    if _cap is not None:
        return
    _cap = _Capture(proc_dir, max_bytes)
    atexit.register(_at_exit)
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "optim"):
        _cap.guard(_cap.install)
    else:
        sys.meta_path.insert(0, _FINDER)


def current() -> _Capture | None:
    """This process's fingerprint capture, while one is armed."""
    return _cap


def attach(rec: Any) -> None:
    """The torch_xla recorder exists: XLA tensors are fingerprinted after each sync."""
    if _cap is not None:
        _cap.rec = rec
        rec.side = _cap


def disarm() -> None:
    """End of `capture()`: flush, unhook."""
    global _cap
    cap, _cap = _cap, None
    sys.meta_path[:] = [f for f in sys.meta_path if f is not _FINDER]
    if cap is not None:
        cap.guard(cap.flush)
        cap.uninstall()


def _at_exit() -> None:
    cap = _cap
    if cap is not None and cap.rec is None and cap.pid == os.getpid():
        cap.guard(cap.flush)  # eager runs; with torch_xla the recorder's finish does it


def _torch_imported(module: Any) -> None:
    if _cap is not None:
        _cap.guard(_cap.install)


_FINDER = AfterImport("torch", _torch_imported)  # runs `install` once `import torch` has finished


class _Capture:
    """One process's fingerprint capture: hooks, what the current step saw, the writer."""

    def __init__(self, proc_dir: str, max_bytes: int) -> None:
        self.writer = FingerprintWriter(proc_dir, max_bytes)
        self.active = True
        self.failed = False
        self.pid = os.getpid()
        self.rec: Any = None  # the torch_xla Recorder, when there is one
        self.handles: list[Any] = []
        self.real_backward: Any = None
        self.roots: weakref.WeakSet[Any] = weakref.WeakSet()
        self.depth = 0
        self.inputs: list[Any] = []  # refs (weak on XLA, detached tensors elsewhere)
        self.outputs: list[Any] = []
        self.loss: Any = None
        self.plans: weakref.WeakKeyDictionary[Any, OptimizerPlan] = weakref.WeakKeyDictionary()
        self.io_slots: dict[tuple[str, int], Slot] = {}
        self.loss_slot = Slot("loss", "loss")
        self.step = 0
        self.pending: list[tuple[Slot, Any]] = []  # XLA: (slot, weakref) until the sync
        self.inflight: list[tuple[Any, Any, list[int], int, int]] = []  # (table, event, ids, step, jstep)
        self.inflight_since = 0.0  # when the oldest table in flight was started
        self.side_state: Any = None  # XLA: the fingerprint graph's state (_fingerprint_xla.SideState)

    # -- hooks ----------------------------------------------------------------------------------

    def install(self) -> None:
        import torch
        from torch.nn.modules import module as nn_module
        from torch.optim import optimizer as optim

        self.handles = [
            nn_module.register_module_forward_pre_hook(self._pre_forward),
            nn_module.register_module_forward_hook(self._post_forward, always_call=True),
            optim.register_optimizer_step_post_hook(self._post_step),
        ]
        self.real_backward = real = torch.Tensor.backward
        cap = self

        def backward(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if cap.active:
                cap.guard(lambda: cap._on_backward(tensor))
            return real(tensor, *args, **kwargs)

        backward.__doc__ = real.__doc__
        backward._xlagraph_wrapped = True  # type: ignore[attr-defined]
        torch.Tensor.backward = backward  # type: ignore[method-assign]

    def uninstall(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []
        torch = sys.modules.get("torch")
        if torch is not None and self.real_backward is not None:
            torch.Tensor.backward = self.real_backward
        self.active = False

    def guard(self, fn: Callable[[], Any]) -> None:
        if not self.active or self.pid != os.getpid():  # a forked child writes nothing
            return
        try:
            fn()
        except Exception as e:
            self.fail(e)

    def fail(self, exc: BaseException) -> None:
        self.active = False
        if self.failed:
            return
        self.failed = True
        msg = f"fingerprints off after error: {type(exc).__name__}: {exc}"
        print(f"{PREFIX} {msg}", file=sys.stderr, flush=True)
        with contextlib.suppress(Exception):
            self.writer.jsonl([{"k": "note", "v": msg}])

    def _pre_forward(self, module: Any, args: Any) -> None:
        self.depth += 1
        if self.depth == 1 and self.active:
            self.guard(lambda: self._top_call(module, args))

    def _post_forward(self, module: Any, args: Any, output: Any) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth == 0 and self.active:
            self.guard(lambda: self._keep(self.outputs, output))

    def _top_call(self, module: Any, args: Any) -> None:
        self.roots.add(module)
        self._keep(self.inputs, args, data_only=True)

    def _keep(self, into: list[Any], value: Any, data_only: bool = False) -> None:
        for t in _tensors(value):
            if len(into) >= MAX_IO_TENSORS:
                return
            if data_only and t.requires_grad:  # a model output passed to a loss module: not data
                continue
            into.append(_ref(t))

    def _on_backward(self, tensor: Any) -> None:
        self.loss = _ref(tensor)

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.active:
            self.guard(lambda: self._collect(optimizer))

    # -- a step ---------------------------------------------------------------------------------

    def _collect(self, optimizer: Any) -> None:
        found = [(self._io_slot("input", i), r) for i, r in enumerate(self.inputs)]
        if self.loss is not None:
            found.append((self.loss_slot, self.loss))
        plan = optimizer_plan(optimizer, self.roots, self.plans)
        state = optimizer.state
        states, params = [], []
        for k, (p, grad, param) in enumerate(plan.params):  # the order of the first step's ids
            g = p.grad
            if g is not None:
                found.append((grad, _ref(g)))
            st = state.get(p) if state else None
            if st:
                for key, value in st.items():
                    if _is_tensor(value):
                        slot = plan.states.get((k, key))
                        if slot is None:
                            slot = plan.states[(k, key)] = Slot(f"{param.name}.{key}", "state")
                        states.append((slot, _ref(value)))
            params.append((param, _ref(p)))
        found += states
        found += params
        found += [(self._io_slot("output", i), r) for i, r in enumerate(self.outputs)]
        self.inputs, self.outputs, self.loss = [], [], None
        if self.rec is not None and any(_on_xla(_deref(r)) for _, r in found):
            self.pending.extend(found)  # after the sync (_after_sync)
            return
        self._fetch_inflight()
        self._start_eager(found)

    def _io_slot(self, role: str, i: int) -> Slot:
        slot = self.io_slots.get((role, i))
        if slot is None:
            slot = self.io_slots[(role, i)] = Slot(f"{role}.{i}", role)
        return slot

    def _start_eager(self, found: list[tuple[Slot, Any]]) -> None:
        from xlagraph.capture._fingerprints import fingerprint

        by_device: dict[str, list[tuple[Slot, Any]]] = {}
        for slot, r in found:
            t = _deref(r)
            if t is not None and t.numel() >= 0:
                by_device.setdefault(str(t.device), []).append((slot, t))
        step = self.step
        self.step += 1
        for items in by_device.values():
            ids = [self.writer.name_id(slot, t) for slot, t in items]
            table = fingerprint([t for _, t in items])
            event = None
            if table.device.type == "cuda":
                import torch

                table = table.to("cpu", non_blocking=True)
                event = torch.cuda.Event()
                event.record()
            self.inflight.append((table, event, ids, step, -1))
        if not by_device:
            self.inflight.append((None, None, [], step, -1))

    def _fetch_inflight(self) -> None:
        """Write the fingerprints started earlier (fetched late: no device sync in the step). The
        XLA tables of several steps come back in one `_xla_get_cpu_tensors` call."""
        inflight, self.inflight = self.inflight, []
        lazy = [t for t, event, _, _, _ in inflight if event is None and t is not None and t.is_xla]
        fetched = (
            dict(zip(map(id, lazy), self.rec.xlac._xla_get_cpu_tensors(lazy), strict=True)) if lazy else {}
        )
        steps: dict[tuple[int, int], tuple[list[int], list[Any]]] = {}
        for table, event, ids, step, jstep in inflight:
            all_ids, tables = steps.setdefault((step, jstep), ([], []))
            if table is None:
                continue
            if event is not None:
                event.synchronize()
            all_ids.extend(ids)
            tables.append(fetched.get(id(table)) if table.is_xla else table.cpu())
        if steps:
            done = [(step, jstep, ids, tables) for (step, jstep), (ids, tables) in steps.items()]
            if not self.writer.write_steps(done, self.rec):
                self.active = False

    def _fetch_due(self) -> bool:
        return bool(self.inflight) and (
            len(self.inflight) >= FETCH_EVERY or time.monotonic() - self.inflight_since >= FETCH_SECONDS
        )

    def flush(self) -> None:
        self._fetch_inflight()

    # -- the recorder's calls (XLA), each guarded here: a failure stops fingerprints only ---------

    def after_sync(self, rec: Any) -> None:
        self.guard(lambda: self._after_sync(rec))

    def finish(self, rec: Any) -> None:
        self.guard(lambda: self._finish_xla())

    def _after_sync(self, rec: Any) -> None:
        """The step's sync is recorded: start this step's fingerprints in a graph of their own
        (`_fingerprint_xla.side_graph`), fetched a few steps later with the tables in flight."""
        if self._fetch_due():
            self._fetch_inflight()
        if not self.pending:
            return
        from xlagraph.capture._fingerprint_xla import (  # (XLA only: reads the debug stream)
            SideState,
            side_graph,
        )

        tensors, ids = [], []
        for slot, r in self.pending:  # ~50 tensors a step: kept to one pass, ids looked up inline
            t = r() if type(r) is weakref.ref else r  # (a tensor off the device is held as itself)
            if t is not None and t.is_xla:
                tensors.append(t)
                ids.append(slot.id if slot.id >= 0 else self.writer.name_id(slot, t))
        self.pending = []
        if not tensors:
            return
        step = self.step
        self.step += 1
        if self.side_state is None:
            self.side_state = SideState()
        table = side_graph(rec, tensors, self.side_state)
        if not self.inflight:
            self.inflight_since = time.monotonic()
        self.inflight.append((table, None, ids, step, rec.s.step - 1))

    def _finish_xla(self) -> None:
        """At exit: write what is fetched; tensors of a step never synced are not fingerprinted
        (that would run the training graph inside this one)."""
        self._fetch_inflight()
        if self.pending:
            self.writer.jsonl(
                [{"k": "note", "v": "the last optimizer step had no sync after it: not fingerprinted"}]
            )
            self.pending = []
        if self.side_state is not None and self.side_state.compiles:
            n = self.side_state.compiles
            note = f"fingerprint graph compiled {n} time(s), run after each sync; left out of the journal"
            self.writer.jsonl([{"k": "note", "v": note}])


def _is_tensor(value: Any) -> bool:
    torch = sys.modules["torch"]
    return isinstance(value, torch.Tensor) and value.numel() > 0


def _tensors(value: Any, depth: int = 0) -> Iterator[Any]:
    """Tensors in a forward's arguments or result: directly, or in lists, tuples and dicts."""
    if _is_tensor(value):
        yield value
    elif depth < 3 and isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v, depth + 1)
    elif depth < 3 and hasattr(value, "__dataclass_fields__"):
        for k in value.__dataclass_fields__:
            yield from _tensors(getattr(value, k, None), depth + 1)


def _on_xla(t: Any) -> bool:
    return t is not None and t.is_xla  # (`is_xla` is ~5x cheaper than `device.type`)


def _ref(t: Any) -> Any:
    """XLA: a weak reference (holding a lazy tensor would make it a graph output). Elsewhere the
    detached tensor itself (the user may drop it before the step hook)."""
    if t.is_xla:
        return weakref.ref(t)
    return t.detach()


def _deref(r: Any) -> Any:
    return r() if isinstance(r, weakref.ref) else r
