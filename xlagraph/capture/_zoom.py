"""`XLAGRAPH_ZOOM=K` (with `XLAGRAPH_FINGERPRINTS=1`): the second pass of `xlagraph diverge`.

During optimizer step K a `TorchDispatchMode` fingerprints every tensor an op of the step returns
or reads from outside the step (`_fingerprints.fingerprint`, the same exact integer sums), and
writes one record an op to `zoom.jsonl`; what a record holds, and why, is docs/divergence.md
("Zoom in"). Autograd's worker threads inherit the mode, so backward is observed too.

On XLA the fingerprints are lazy ops appended to the step's graph (observation changes the graph
there, which is why this is a pass of its own) and fetched once, at the end of step K. Eager
(CPU, CUDA) fingerprints run as ordinary ops, fetched once at the end too. Never breaks the
training: the first error stops the zoom and is written to zoom.jsonl.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import weakref
from typing import Any

from xlagraph.capture._env import env_number
from xlagraph.capture._import_hook import AfterImport

__all__ = ["FILE", "arm", "disarm", "zoom_step"]

FILE = "zoom.jsonl"
MAX_OPS = 20000  # observed values kept (XLAGRAPH_ZOOM_MAX_OPS): bounds memory and disk (~200 B each)
_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # xlagraph/: its ops are not the user's
_TRANSPARENT = frozenset({"backward"})  # xlagraph's wrapper of Tensor.backward: the ops are the user's

_zoom: _Zoom | None = None


def zoom_step(environ: Any) -> int | None:
    """The step XLAGRAPH_ZOOM names, None when unset or not a step number."""
    raw = str(environ.get("XLAGRAPH_ZOOM", "")).strip()
    return int(raw) if raw.isdigit() else None


def arm(proc_dir: str, environ: Any) -> None:
    global _zoom
    step = zoom_step(environ)
    if step is None or _zoom is not None:
        return
    limit = env_number(environ, "XLAGRAPH_ZOOM_MAX_OPS", MAX_OPS, int)
    _zoom = _Zoom(proc_dir, step, max(1, limit))
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "optim"):
        _zoom.guard(_zoom.install)
    else:
        sys.meta_path.insert(0, _FINDER)


def disarm() -> None:
    global _zoom
    zoom, _zoom = _zoom, None
    sys.meta_path[:] = [f for f in sys.meta_path if f is not _FINDER]
    if zoom is not None:
        zoom.guard(zoom.finish)


def _torch_imported(module: Any) -> None:
    if _zoom is not None:
        _zoom.guard(_zoom.install)


_FINDER = AfterImport("torch", _torch_imported)  # runs `install` once `import torch` has finished


class _Zoom:
    def __init__(self, proc_dir: str, step: int, limit: int) -> None:
        self.dir = proc_dir
        self.step = step
        self.limit = limit
        self.seen_steps = 0
        self.mode: Any = None
        self.handle: Any = None
        self.done = False
        self.pid = os.getpid()
        self.records: list[dict[str, Any]] = []
        self.tensors: list[Any] = []  # one fingerprint row (1, 5) per record, on the op's device
        self.made: dict[int, Any] = {}  # id -> weakref of tensors an op of the step returned
        self.read: set[int] = set()  # ids of outside tensors already recorded
        self.names: dict[int, str] = {}
        self.writer: dict[int, int] = {}  # storage address -> the record that last wrote it (eager)
        self.dropped = 0
        self.thread = 0

    def guard(self, fn: Any) -> None:
        try:
            fn()
        except Exception as exc:  # never break the user's training
            self.fail(exc)

    def fail(self, exc: BaseException) -> None:
        if self.done:
            return
        self.done = True  # the mode stays a pass-through until the step ends (inside it, it can't pop)
        print(f"xlagraph zoom: stopped ({type(exc).__name__}: {exc})", file=sys.stderr)
        self._write([{"k": "error", "v": f"{type(exc).__name__}: {exc}"}])

    def install(self) -> None:
        from torch.optim import optimizer as optim

        self.handle = optim.register_optimizer_step_post_hook(self._post_step)
        if self.step == 0:
            self._enter_mode()

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.guard(self._on_step_end)

    def _on_step_end(self) -> None:
        if self.done or os.getpid() != self.pid:
            self._exit_mode()
            return
        ended = self.seen_steps
        self.seen_steps += 1
        if ended == self.step:
            self._exit_mode()
            self.finish()
        elif ended + 1 == self.step:
            self._enter_mode()

    def _enter_mode(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        zoom = self

        class _Observe(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                out = func(*args, **(kwargs or {}))
                if not zoom.done:
                    try:
                        zoom.observe(func, args, kwargs or {}, out)
                    except Exception as exc:
                        zoom.fail(exc)
                return out

        self.names = _param_names()
        self.thread = threading.get_ident()
        self.mode = _Observe()
        self.mode.__enter__()

    def _exit_mode(self) -> None:
        mode, self.mode = self.mode, None
        if mode is not None:
            with contextlib.suppress(RuntimeError):  # popped already (an error inside the mode)
                mode.__exit__(None, None, None)

    def observe(self, func: Any, args: Any, kwargs: Any, out: Any) -> None:
        import torch

        where = _frames(self.thread)
        if where is None:  # an op of xlagraph's own (the step's fingerprints): not the user's
            return
        at, lib = where
        node = torch._C._current_autograd_node()
        base: dict[str, Any] = {"op": str(func.overloadpacket.__name__), "at": at, "lib": lib}
        if node is not None:
            base["node"] = node.name()
        inputs = [t for value in (*args, *kwargs.values()) for t in _tensor_list(value)]
        stream = _stream(inputs)
        if stream is not None:
            base["s"] = stream
        reads = sorted({w for t in inputs if (w := self.writer.get(_address(t), -1)) >= 0})
        if reads:
            base["r"] = reads
        scalars = _scalars(args, kwargs)
        if scalars:
            base["a"] = scalars
        for t in inputs:
            if id(t) in self.read or self._made(t):
                continue
            self.read.add(id(t))
            self._record(t, {**base, "io": "in", "name": self.names.get(id(t), "")})
        outs = _tensor_list(out)
        outs += [t for t in _written(func, args, kwargs) if all(t is not o for o in outs)]
        for j, t in enumerate(outs):
            self.made[id(t)] = weakref.ref(t)
            if self._record(t, {**base, "io": "out", "out": j}):
                self.writer[_address(t)] = len(self.records) - 1

    def _made(self, t: Any) -> bool:
        ref = self.made.get(id(t))
        return ref is not None and ref() is t

    def _record(self, t: Any, record: dict[str, Any]) -> bool:
        if len(self.records) >= self.limit:
            self.dropped += 1
            return False
        from xlagraph.capture._fingerprints import fingerprint

        record.update(shape=list(t.shape), dtype=str(t.dtype).replace("torch.", ""))
        # On XLA the mode runs below functionalization: ops are out-of-place there, so the value
        # is kept as it is and fingerprinted at the end. Eager values change in place later: now.
        self.tensors.append(t if t.device.type == "xla" else fingerprint([t]))
        self.records.append(record)
        return True

    def finish(self) -> None:
        if self.done or os.getpid() != self.pid:
            return
        self.done = True
        self._exit_mode()
        if self.handle is not None:
            self.handle.remove()
        if self.seen_steps <= self.step:
            ended = "the run ended before this step"
            self._write([{"k": "zoom", "step": self.step, "ops": 0, "note": ended}])
            return
        rows = _fetch(self.tensors)
        out: list[dict[str, Any]] = [
            {"k": "zoom", "step": self.step, "ops": len(self.records), "dropped": self.dropped}
        ]
        for i, (record, row) in enumerate(zip(self.records, rows, strict=True)):
            out.append({"k": "v", "i": i, **record, "fp": row})
        self.records, self.tensors, self.made, self.writer = [], [], {}, {}
        self._write(out)

    def _write(self, records: list[dict[str, Any]]) -> None:
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, FILE), "a", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, separators=(",", ":")) + "\n")


def _fetch(tensors: list[Any]) -> list[list[int]]:
    """Every row to the host at once, per device (one transfer; on XLA one graph)."""
    import torch

    from xlagraph.capture._fingerprints import fingerprint

    rows: list[list[int]] = [[] for _ in tensors]
    by_device: dict[str, list[int]] = {}
    for i, t in enumerate(tensors):
        by_device.setdefault(str(t.device), []).append(i)
    for members in by_device.values():
        if tensors[members[0]].device.type == "xla":  # the values themselves, seen below functionalization
            table = fingerprint([torch._to_functional_tensor(tensors[i]) for i in members]).cpu().tolist()
        else:
            table = torch.cat([tensors[i] for i in members]).cpu().tolist()
        for i, row in zip(members, table, strict=True):
            rows[i] = [int(v) for v in row]
    return rows


def _tensor_list(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value] if _observable(value) else []
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor) and _observable(v)]
    return []


def _written(func: Any, args: Any, kwargs: Any) -> list[Any]:
    """Tensors the op writes (`Tensor(a!)` in its schema), returned or not."""
    found: list[Any] = []
    for k, arg in enumerate(func._schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = kwargs.get(arg.name) if arg.kwarg_only or k >= len(args) else args[k]
        found += _tensor_list(value)
    return found


def _address(t: Any) -> int:
    """The memory an eager tensor lives in (views share it); -1 where there is none to read (XLA)."""
    if t.device.type == "xla":
        return -1
    try:
        return int(t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return -1


def _stream(tensors: list[Any]) -> int | None:
    """The id of the CUDA stream the op was queued on (0: the default stream); None off CUDA."""
    for t in tensors:
        if t.device.type == "cuda":
            import torch

            return int(torch.cuda.current_stream(t.device).stream_id)
    return None


def _scalars(args: Any, kwargs: Any) -> list[str]:
    """The op's other arguments as short text (a learning rate, an alpha, sizes), tensors left out."""
    import torch

    out: list[str] = []
    for v in (*args, *kwargs.values()):
        if isinstance(v, torch.Tensor) or v is None:
            continue
        if isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v):
            continue
        text = repr(v)
        out.append(text if len(text) <= 60 else text[:57] + "...")
    return out[:8]


def _observable(t: Any) -> bool:
    import torch

    return t.numel() > 0 and not t.is_complex() and t.dtype not in (torch.uint64, torch.uint32)


def _frames(thread: int) -> tuple[str, str] | None:
    """(the user's line, the innermost library line) of the op being run; None for xlagraph's own.
    An op with no Python caller runs on an autograd worker thread (backward on XLA, CUDA): the
    stack of `thread`, the one that started the step and waits in `backward()`, says where."""
    frame: Any = sys._getframe(1)  # observe; then __torch_dispatch__; then the op's caller, if any
    for _ in range(2):
        frame = frame.f_back if frame is not None else None
    if frame is None and thread != threading.get_ident():
        frame = sys._current_frames().get(thread)
    return _walk(frame)


def _walk(frame: Any) -> tuple[str, str] | None:
    from xlagraph.source_paths import is_library_path, portable_path

    lib = ""
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(_OWN):
            if frame.f_code.co_name not in _TRANSPARENT:
                return None
        elif not path.startswith("<") and "/torch/utils/_python_dispatch" not in path:
            where = f"{portable_path(path)}:{frame.f_lineno}"
            if not is_library_path(path):
                return where, lib
            lib = lib or where
        frame = frame.f_back
    return "", lib


def _param_names() -> dict[int, str]:
    """Parameter and optimizer-state names as the step's fingerprints give them (when on)."""
    from xlagraph.capture import _fingerprint_capture

    cap = _fingerprint_capture.current()
    names: dict[int, str] = {}
    if cap is None:
        return names
    for root in list(cap.roots):
        for name, p in root.named_parameters():
            _name(names, p, name)
            if p.grad is not None:
                _name(names, p.grad, f"{name}.grad")
        for name, b in root.named_buffers():
            _name(names, b, name)
    return names


def _name(names: dict[int, str], t: Any, name: str) -> None:
    names.setdefault(id(t), name)
    if t.device.type == "xla":  # the mode sees the value inside the functional wrapper
        import torch

        names.setdefault(id(torch._from_functional_tensor(t)), name)
