"""Dynamo's own record, with no TORCH_LOGS: torch's structured trace, filtered, kept in the capture
in torch's own format, so that one reader (`xlagraph.parse.torch_trace`) reads a capture and a
user's own TORCH_TRACE folder alike. What is kept, the `"xlagraph": {"step", "t"}` each line gets,
the bound (`XLAGRAPH_TRACE_MB`), the torch versions, and why a compiled function's outermost call
is a step where nothing syncs (`on_call`, through `_TorchDynamoContext.enter_exit_hooks`, torch
2.1 - 2.9): docs/compiled.md ("How it is captured", "Steps are your steps"). Never breaks the run:
the first error turns this handler off and says so once."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from xlagraph.capture import files as fmt
from xlagraph.capture._env import env_number
from xlagraph.errors import RecompileError

__all__ = ["arm", "armed", "calls", "disarm"]

PREFIX = "xlagraph capture:"
DEFAULT_MB = 8.0

_KEEP_ARTIFACTS = frozenset({"recompile_reasons", "dynamo_graph_break_reason"})
_METRICS_FIELDS = (
    "compile_id",
    "frame_key",
    "co_name",
    "co_filename",
    "co_firstlineno",
    "cache_size",
    "accumulated_cache_size",
    "guard_count",
    "graph_op_count",
    "graph_node_count",
    "graph_input_count",
    "start_time",
    "entire_frame_compile_time_s",
    "backend_compile_time_s",
    "inductor_compile_time_s",
    "code_gen_time_s",
    "fail_type",
    "fail_reason",
    "fail_user_frame_filename",
    "fail_user_frame_lineno",
    "restart_reasons",
    "dynamo_time_before_restart_s",
    "stack_trace",
    "has_guarded_code",
    "recompile_reason",
    "is_forward",
)
_CONTEXT = ("frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "rank", "has_payload")

_TAIL = re.compile(r"^(.*?)((?::\d+)?[`)\]:.]*)$")

_handler: _TraceHandler | None = None
_calls = 0  # outermost calls of compiled functions so far
_depth = 0
_on_call: Callable[[], None] | None = None
_patched: tuple[Any, Any] | None = None  # (the context class, its own __init__)
# the user's frame of the outermost call now running: (file, line, function). dynamo's own stack
# of a frame it starts often holds that frame alone, without the line that called it.
_site: tuple[str, int, str] | None = None
_sites: dict[tuple[str, int], int] = {}  # outermost calls per calling line, in first-call order
_library: tuple[str, ...] | None = None  # folders of installed code (torch's, the stdlib's)


def calls() -> int:
    return _calls


def loop_step() -> int | None:
    """Without torch_xla: the step now running, the calls so far from the line that called a
    compiled function first (the loop's), 0-based; a call from another line (an evaluation pass)
    belongs to the step it runs in."""
    first = next(iter(_sites.values()), 0)
    return first - 1 if first else None


def calls_by_site() -> list[tuple[str, int, int]]:
    """(file, line, calls) of each line that called a compiled function, first caller first."""
    return [(file, line, n) for (file, line), n in _sites.items()]


def armed() -> bool:
    return _handler is not None and _handler.active


def arm(
    proc_dir: str,
    environ: dict[str, str],
    step_of: Callable[[], tuple[int | None, float]],
    on_call: Callable[[], None] | None = None,
) -> None:
    """Attach the handler to torch's trace logger (torch is imported). `step_of` gives the
    journal step being built and the seconds since capture started; `on_call` runs at each
    outermost call of a compiled function, before it runs."""
    global _handler, _on_call
    if _handler is not None:
        return
    _on_call = on_call
    torch_logging = sys.modules.get("torch._logging._internal")
    if torch_logging is None:
        return
    mb = env_number(environ, "XLAGRAPH_TRACE_MB", DEFAULT_MB, float)
    if mb <= 0:
        return
    from xlagraph.capture.stored_sources import Relativizer

    trace_log = torch_logging.trace_log
    handler = _TraceHandler(
        os.path.join(proc_dir, fmt.TORCH_TRACE), int(mb * 1e6), Relativizer.here(), step_of
    )
    trace_log.addHandler(handler)
    trace_log.setLevel(logging.DEBUG)  # torch sets it only for TORCH_TRACE; NOTSET drops debug
    _handler = handler
    _hook_calls()


_EVAL_FRAME = "torch._dynamo.eval_frame"


def _hook_calls() -> None:
    """Every torch.compile context made from now on counts the outermost calls it wraps. torch
    imports dynamo at the first torch.compile, not with torch (1.5 s): until then this waits for
    that import instead of making it."""
    eval_frame = sys.modules.get(_EVAL_FRAME)
    if eval_frame is not None:
        _patch(eval_frame)
        return
    from xlagraph.capture._import_hook import AfterImport

    if not any(isinstance(f, AfterImport) and f.name == _EVAL_FRAME for f in sys.meta_path):
        sys.meta_path.insert(0, AfterImport(_EVAL_FRAME, _patch_quietly))


def _patch_quietly(eval_frame: Any) -> None:
    with suppress(Exception):  # (never the user's problem: calls are then not counted)
        _patch(eval_frame)


def _patch(eval_frame: Any) -> None:
    global _patched
    if _patched is not None or _handler is None:
        return
    cls = getattr(eval_frame, "_TorchDynamoContext", None)
    init = getattr(cls, "__init__", None)
    if cls is None or init is None:
        return

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        hooks = getattr(self, "enter_exit_hooks", None)
        if isinstance(hooks, list):
            hooks.append(_enter)

    __init__.__wrapped__ = init  # type: ignore[attr-defined]
    cls.__init__ = __init__
    _patched = (cls, init)


def _enter() -> Callable[[], None]:
    global _calls, _depth, _site
    if _depth == 0:
        _calls += 1
        _site = _caller()
        if _site is not None:
            where = _site[:2]
            _sites[where] = _sites.get(where, 0) + 1
        if _on_call is not None:
            try:
                _on_call()
            except RecompileError:  # XLAGRAPH_ON_RECOMPILE=raise: the run stops at this call
                raise
            except Exception:  # (the recorder guards itself; never the user's problem)
                pass
    _depth += 1
    return _leave


def _caller() -> tuple[str, int, str] | None:
    """The innermost frame of the user's code below this call (torch's wrappers skipped)."""
    global _library
    if _library is None:
        _library = _library_roots()
    f = sys._getframe(2)  # (_enter <- torch's compile_wrapper <- ...)
    for _ in range(16):
        if f is None:
            return None
        name = f.f_code.co_filename
        if not name.startswith(("<", *_library)):
            return name, f.f_lineno, f.f_code.co_name
        f = f.f_back
    return None


def _library_roots() -> tuple[str, ...]:
    """Where installed code lives: the stdlib's and site-packages' folders, and torch's own (a
    source checkout of torch is a library too; a user's folder named `torch_xla` is not)."""
    import sysconfig

    roots = {sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    for name in ("torch", "torch_xla"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            roots.add(os.path.dirname(os.path.dirname(module.__file__)) + os.sep + name + os.sep)
    return tuple(sorted(r.rstrip(os.sep) + os.sep for r in roots if r))


def _leave() -> None:
    global _depth
    _depth = max(0, _depth - 1)


def disarm() -> None:
    global _handler, _on_call, _patched
    _on_call = None
    sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "name", None) != _EVAL_FRAME]
    if _patched is not None:
        cls, init = _patched
        cls.__init__ = init
        _patched = None
    handler, _handler = _handler, None
    if handler is None:
        return
    torch_logging = sys.modules.get("torch._logging._internal")
    if torch_logging is not None:
        torch_logging.trace_log.removeHandler(handler)
    handler.close()


def _guard_comment_cwd(cwd: str) -> str:
    """`# ` and the working directory as a dynamo guard's comment cites it: torch's
    `shorten_filename` cuts a path after its common path with torch's install folder, so a checkout
    outside it loses only its first two characters (`ork/wt/x/scripts/a.py` for `/work/wt/x/...`), a
    tail of this machine's path that the rewriting of whole absolute paths does not see. Empty when
    torch is absent or the cut is too short to be told from other text."""
    try:
        from torch.utils._traceback import shorten_filename
    except ImportError:
        return ""
    short = shorten_filename(os.path.join(cwd, "x"))[:-1]
    return "" if os.path.isabs(short) or len(short) < 8 else "# " + short


class _TraceHandler(logging.Handler):
    """Writes the kept events, one `os.write` each (a kill leaves at most the last one partial)."""

    def __init__(
        self,
        path: str,
        limit: int,
        paths: Any,
        step_of: Callable[[], tuple[int | None, float]],
    ) -> None:
        super().__init__(logging.DEBUG)
        self.path = path
        self.limit = limit
        self.paths = paths
        self.step_of = step_of
        self.pid = os.getpid()
        self.fd = -1
        self.written = 0
        self.active = True
        self.lock_ = threading.Lock()
        from xlagraph.capture.stored_sources import _ABS_TOKEN  # (not at start-up: arm() runs late)

        self.tokens = _ABS_TOKEN
        self.cut = _guard_comment_cwd(os.getcwd())

    def emit(self, record: logging.LogRecord) -> None:
        if not self.active or os.getpid() != self.pid:
            return
        try:
            line = self._line(record)
            if line:
                self._write(line)
        except Exception as e:  # never the user's problem
            self.active = False
            print(f"{PREFIX} dynamo record off after error: {type(e).__name__}: {e}", file=sys.stderr)

    def _line(self, record: logging.LogRecord) -> str:
        meta = getattr(record, "metadata", None)
        if not isinstance(meta, dict):
            return ""
        name = next((k for k in meta if k not in _CONTEXT and k != "stack"), "")
        payload: Any = None
        if name == "artifact":
            if meta[name].get("name") not in _KEEP_ARTIFACTS:
                return ""
            payload = getattr(record, "payload", None)
        elif name in ("compilation_metrics", "bwd_compilation_metrics"):
            metrics = meta[name]
            meta = {**meta, name: {k: metrics[k] for k in _METRICS_FIELDS if k in metrics}}
        elif name not in ("dynamo_start", "str"):
            return ""
        step, seconds = self.step_of()
        place: dict[str, Any] = {"step": step, "t": round(seconds, 6)}
        if _site is not None and _depth > 0:  # the user's line that called what dynamo compiles
            place["caller"] = [self._text(_site[0]), _site[1], _site[2]]
        out = {**self._portable(meta), "xlagraph": place}
        text = json.dumps(out, separators=(", ", ": "))
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(record.created))
        where = f"{self._text(record.pathname)}:{record.lineno}"
        head = f"V{stamp}.{int(record.msecs * 1000):06d} {record.process} {where}] "
        if isinstance(payload, str):
            text += "".join(f"\n\t{p}" for p in self._text(payload).split("\n"))
        return head + text + "\n"

    def _portable(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, dict):
            return {k: self._portable(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._portable(v) for v in value]
        return value

    def _text(self, text: str) -> str:
        """Absolute paths of this machine made as the journal makes them (the user's files relative
        to the working directory, a library's to its import root)."""
        if os.path.isabs(text) and "\n" not in text:
            return self.paths(text)
        if "/" not in text:
            return text
        out = self.tokens.sub(self._token, text)
        return out.replace(self.cut, "# ") if self.cut else out

    def _token(self, m: re.Match[str]) -> str:
        """`/abs/file.py:22` or `/abs/file.py`` ` -> the portable path, its line and punctuation kept."""
        path, tail = _TAIL.match(m.group(0)).groups()  # type: ignore[union-attr]
        return self.paths(path) + tail

    def _write(self, line: str) -> None:
        data = line.encode("utf-8", "replace")
        with self.lock_:
            if self.fd < 0:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if self.written + len(data) > self.limit:
                note = json.dumps({"xlagraph_truncated": {"limit_bytes": self.limit}})
                os.write(self.fd, f"V0000 00:00:00.000000 {self.pid} xlagraph:0] {note}\n".encode())
                self.active = False
                return
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
            self.written += len(data)

    def close(self) -> None:
        with self.lock_:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
        super().close()
