"""What the processes of one report share: each distinct graph file is parsed once, and each
distinct baseline choice (the diffs of a recompile against its candidates) is made once (the
content keys, and why only answers that hold no path are shared: docs/performance.md, "A pod is
many processes running the same graphs"). A graph whose reader notes name its file (old
spellings), or a choice whose process read such a graph, is computed again for each process, so
that its message names that process's own file. Outside `sharing()` nothing is shared (the API's
single-graph calls keep no state between calls)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from xlagraph.parse.sources import split_spec

__all__ = ["Shared", "current", "sharing"]

_CHUNK = 1 << 20


def file_digest(path: str) -> str | None:
    """The blake2b digest of a regular file's bytes as stored (compressed ones too), or None
    when it is not one or cannot be read (the reader then says why, for that process)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        h = hashlib.blake2b(digest_size=20)
        while chunk := os.read(fd, _CHUNK):
            h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


@dataclass
class Shared:
    """Content-keyed caches for one report: digests by path, parsed modules and baseline
    choices by content key."""

    digests: dict[str, str | None] = field(default_factory=dict)
    keys: dict[tuple[str, str], Hashable | None] = field(default_factory=dict)
    modules: dict[Hashable, Any] = field(default_factory=dict)
    choices: dict[Hashable, Any] = field(default_factory=dict)
    hits: int = 0
    # How many processes the report holds (0: not said). With one, no later process reuses its
    # choices, and its recompiles may be explained by worker processes.
    processes: int = 0

    def digest(self, path: str) -> str | None:
        if path not in self.digests:
            self.digests[path] = file_digest(path)
        return self.digests[path]

    def graph_key(self, graph_hash: str, spec: str) -> Hashable | None:
        """What a graph is, whoever recorded it: None when its file cannot be told by content."""
        if (graph_hash, spec) not in self.keys:
            self.keys[graph_hash, spec] = self._graph_key(graph_hash, spec)
        return self.keys[graph_hash, spec]

    def _graph_key(self, graph_hash: str, spec: str) -> Hashable | None:
        if not spec:
            return None
        path, index = split_spec(spec)
        digest = self.digest(path)
        if digest is None:
            return None
        # The name's suffixes pick the decompressor; the bytes and the index say the rest.
        suffix = "".join(s for s in (".xz", ".gz") if path.endswith(s))
        return (graph_hash, digest, index, suffix)

    def parsed(self, kind: str, path: str, parse: Callable[[str], Any]) -> Any:
        """`parse(path)` once per distinct content of `path` (a tensor report, ...); what raises
        is raised for each process, naming its own file."""
        digest = self.digest(path)
        if digest is None:
            return parse(path)
        key = (kind, digest, "".join(s for s in (".xz", ".gz") if path.endswith(s)))
        if key in self.modules:
            self.hits += 1
            return self.modules[key]
        value = self.modules[key] = parse(path)
        return value

    def module(self, key: Hashable | None, load: Callable[[], Any], ok: Callable[[Any], bool]) -> Any:
        """The module of `key`, loaded once; a failure (`ok` False) is never shared."""
        if key is None:
            return load()
        if key in self.modules:
            self.hits += 1
            return self.modules[key]
        value = load()
        if ok(value):
            self.modules[key] = value
        return value


_SHARED: ContextVar[Shared | None] = ContextVar("xlagraph_shared", default=None)


def current() -> Shared | None:
    return _SHARED.get()


@contextmanager
def sharing() -> Iterator[Shared]:
    """Share parsed graphs and baseline choices among the processes reported inside the block."""
    shared = Shared()
    token = _SHARED.set(shared)
    try:
        yield shared
    finally:
        _SHARED.reset(token)
