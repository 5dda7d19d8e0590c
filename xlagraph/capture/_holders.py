"""What keeps each live XLA tensor alive, in the user's own names: a bounded breadth-first walk
from the user's frames at a step marker (why, what it reads and its bounds: docs/capture-settings.md,
"What keeps a tensor alive"). Never `getattr` on a user's object (a property could run code);
`MAX_NODES` objects and `MAX_ITEMS` items a container, so a large heap costs what a small one does."""

from __future__ import annotations

import collections
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from xlagraph.capture import files as fmt

__all__ = ["MAX_NODES", "find_holders"]

MAX_NODES = 20_000
MAX_ITEMS = 256
MAX_DEPTH = 6
MAX_HOLDERS = 4_000  # tensors
PATHS = 3  # paths kept per tensor: the one that stores it is not always the shortest

_SKIP_TYPES: tuple[type, ...] = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.GeneratorType,
    types.CodeType,
    types.FrameType,
    str,
    bytes,
    bytearray,
    int,
    float,
    complex,
    bool,
    type(None),
    range,
)
_SEQUENCES = (list, tuple, collections.deque)


def find_holders(
    frame: Any,
    is_user_file: Callable[[str], bool],
    tensor_id: Callable[[Any], int | None],
    relative: Callable[[str, int], str],
    pending: Callable[[Any], bool] = lambda t: False,
) -> list[dict[str, Any]]:
    """Records of the XLA tensors reached from the user's frames at and above `frame` (up to
    `PATHS` per tensor, shortest first):
    `{"id", "path", "shape", "name", "kind", "function", "file", "line", "owner_file"}`. `name` is the
    name that stores it (the last attribute or variable before any subscript), `kind` says
    where that name lives (`local`, `global`, `attribute`), `owner_file` the file of the class
    whose attribute it is. `tensor_id(t)` is torch_xla's id of an XLA tensor (None for others);
    `relative(path, line)` makes a path portable; `pending(t)`: the tensor is not yet computed
    (an output of the coming graph, recorded as `"pending": true`)."""
    import torch

    roots: list[tuple[str, Any, dict[str, Any]]] = []
    seen_globals: set[int] = set()
    f = frame
    while f is not None:
        code = f.f_code
        if is_user_file(code.co_filename):
            where = {
                "function": code.co_name,
                "file": relative(code.co_filename, f.f_lineno),
                "line": f.f_lineno,
            }
            module_level = f.f_locals is f.f_globals
            scope = "global" if module_level else "local"
            for name, value in list(f.f_locals.items()):
                if not name.startswith("__"):
                    roots.append((name, value, {**where, "kind": scope, "name": name}))
            if not module_level and id(f.f_globals) not in seen_globals:
                seen_globals.add(id(f.f_globals))
                for name, value in list(f.f_globals.items()):
                    if not name.startswith("__") and not isinstance(value, _SKIP_TYPES):
                        roots.append((name, value, {**where, "kind": "global", "name": name}))
        f = f.f_back
    return _walk(roots, torch, is_user_file, tensor_id, relative, pending)


def _walk(
    roots: list[tuple[str, Any, dict[str, Any]]],
    torch: Any,
    is_user_file: Callable[[str], bool],
    tensor_id: Callable[[Any], int | None],
    relative: Callable[[str, int], str],
    pending: Callable[[Any], bool],
) -> list[dict[str, Any]]:
    tensor_type, module_type, optim_type = torch.Tensor, torch.nn.Module, torch.optim.Optimizer
    found: dict[int, list[dict[str, Any]]] = {}
    visited: set[int] = set()
    queue: collections.deque[tuple[str, Any, dict[str, Any], int]] = collections.deque(
        (path, value, base, 0) for path, value, base in roots
    )
    nodes = 0
    while queue and nodes < MAX_NODES and len(found) < MAX_HOLDERS:
        path, value, base, depth = queue.popleft()
        if isinstance(value, _SKIP_TYPES):
            continue
        nodes += 1
        if isinstance(value, tensor_type):  # every path to it, up to PATHS, shortest first
            _tensor(path, value, base, found, tensor_id, pending)
            grad = value.grad if value.is_leaf and value.requires_grad else None
            if grad is not None:
                _tensor(f"{path}.grad", grad, base, found, tensor_id, pending)
            continue
        if id(value) in visited:
            continue
        visited.add(id(value))
        if depth >= MAX_DEPTH:
            continue
        for step, child, owner in _children(value, module_type, optim_type, is_user_file):
            child_base = base
            if owner is not None:  # an attribute: its name stores what is below it
                owner_file = relative(owner, 0) if owner else ""
                child_base = {**base, "kind": "attribute", "name": step[1:], "owner_file": owner_file}
            queue.append((path + step, child, child_base, depth + 1))
    return [r for paths in found.values() for r in paths]


def _tensor(
    path: str,
    t: Any,
    base: dict[str, Any],
    found: dict[int, list[dict[str, Any]]],
    tensor_id: Callable[[Any], int | None],
    pending: Callable[[Any], bool],
) -> None:
    t = getattr(t, "global_tensor", t) if type(t).__name__ == "XLAShardedTensor" else t
    tid = tensor_id(t)
    if tid is None:
        return
    paths = found.setdefault(tid, [])
    if len(paths) < PATHS:
        record = {"id": tid, "path": path, "shape": fmt.tensor_shape(t), **base}
        if not paths and pending(t):
            record["pending"] = True
        paths.append(record)


def _children(
    value: Any, module_type: type, optim_type: type, is_user_file: Callable[[str], bool]
) -> Iterator[tuple[str, Any, str | None]]:
    """(path step, child, owner file for an attribute, else None) of one object."""
    if isinstance(value, dict):
        for k, (key, child) in enumerate(list(value.items())):
            if k >= MAX_ITEMS:
                return
            yield (f"[{key!r}]" if isinstance(key, (str, int)) else "[…]"), child, None
    elif isinstance(value, _SEQUENCES):
        for k, child in enumerate(list(value)[:MAX_ITEMS]):
            yield f"[{k}]", child, None
    elif isinstance(value, (module_type, optim_type)):
        owner = _class_file(type(value))
        attrs = vars(value)
        for group in ("_modules", "_parameters", "_buffers"):
            for name, child in list((attrs.get(group) or {}).items()):
                yield f".{name}", child, owner
        for name, child in list(attrs.items()):
            if not name.startswith("_") and name not in ("training", "defaults"):
                yield f".{name}", child, owner
        if isinstance(value, optim_type):
            yield ".state", attrs.get("state"), owner
    else:
        cls = type(value)
        owner = _class_file(cls)
        attrs = getattr(value, "__dict__", None)
        if not isinstance(attrs, dict) or not owner or not is_user_file(owner):
            return  # library objects other than modules and optimizers are not walked
        for name, child in list(attrs.items())[:MAX_ITEMS]:
            yield f".{name}", child, owner


def _class_file(cls: type) -> str:
    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    return getattr(module, "__file__", None) or ""
