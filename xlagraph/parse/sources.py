"""Find the graphs in whatever the user points at: one HLO or StableHLO file, an
`XLA_SAVE_TENSORS_FILE` dump (HLO, StableHLO or lazy-IR text), a lazy-IR file, or a
`--xla_dump_to` directory.

Listing is cheap (files are split, not parsed); `read` parses one graph. `PATH#K` selects the
K-th graph (0-based) of a multi-graph source.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace

from xlagraph.errors import InputError, ParseError
from xlagraph.ir import Frame, GraphInfo, Module
from xlagraph.parse.compressed import compressed_twin
from xlagraph.parse.hlo import looks_like_hlo, parse_hlo
from xlagraph.parse.input_files import (
    check_regular_file,
    max_input_bytes,
    read_bytes,
    read_text,
    size_error,
)
from xlagraph.parse.stablehlo import looks_like_stablehlo, read_stablehlo
from xlagraph.source_paths import portable_path

# check_regular_file and read_bytes are `input_files`'; report/ still imports them from here.
__all__ = [
    "DUMP_FILE",
    "Graph",
    "Source",
    "check_regular_file",
    "first_meaningful",
    "load_module",
    "open_source",
    "read",
    "read_bytes",
    "split_spec",
]

DOT_HINT = "Graphviz dot is not read by xlagraph: dump with XLA_SAVE_TENSORS_FMT=hlo (or text)"

# --xla_dump_to file names (xla/service/dump.cc FilenameFor); module names contain dots.
DUMP_FILE = re.compile(
    r"^(?:\d+\.)?module_(\d{4,})\.(.+)\."
    r"(before_optimizations|(?:[a-z][a-z0-9_.]*_)?after_optimizations|\d{4}\..+)\.(txt|hlo\.pb)(?:\.xz|\.gz)?$"
)
# Files of one graph each that XLA or a compile cache writes as a binary HloModuleProto, looked
# for one or two folders down where a folder holds no `module_*` dumps (Neuron's compile cache:
# `MODULE_<hash>/model.hlo_module.pb`).
_PROTO_FILE = re.compile(r"\.(hlo_module|hlo)\.pb(?:\.xz|\.gz)?$")
_NOT_HLO_SUFFIXES = ("-buffer-assignment", "-memory-usage-report", "-live-range", "-buffer-assignment-values")
_FRAME_LINE = re.compile(r"\s+(.*) \((.*):([0-9]{1,9})\)\s*$")
_HASHES = re.compile(r"(?:Root )?Hashes: \(([^)]*)\)")
_ASCII_INDEX = re.compile(r"[0-9]+")
_MAX_INDEX_DIGITS = 12


@dataclass(frozen=True)
class Graph:
    """One graph of a source, located but not parsed. `content` is the text, or for a binary
    proto the call that prints it (made on first use: `diff DIR#3 DIR#7` of a compile cache
    converts two modules, not all of them)."""

    path: str
    content: str | Callable[[], str]
    first_line: int
    format: str  # hlo | lazy-ir | stablehlo | dot
    info: GraphInfo

    @property
    def text(self) -> str:
        content = self.content
        if not isinstance(content, str):
            content = content()
            object.__setattr__(self, "content", content)  # a cache: the graph stays the same
        return content

    @property
    def label(self) -> str:
        return self.info.label


@dataclass(frozen=True)
class Source:
    """What `open_source` found: the graphs in order, plus notes (e.g. a truncated last block)."""

    path: str
    kind: str  # hlo-file | stablehlo-file | lazy-ir-file | save-file | dump-dir
    graphs: tuple[Graph, ...]
    notes: tuple[str, ...] = ()


def split_spec(spec: str) -> tuple[str, int | None]:
    """`dump.txt#3` -> ("dump.txt", 3); a `#` not followed by digits is part of the path.

    Only ASCII digits count (`str.isdigit` also accepts `٣` and `²`).
    """
    path, sep, index = spec.rpartition("#")
    if sep and path and _ASCII_INDEX.fullmatch(index):
        if len(index) > _MAX_INDEX_DIGITS:
            raise InputError(path, f"graph index #{index[:20]}... is too large")
        return path, int(index)
    if sep and path and _ASCII_INDEX.fullmatch(index.removeprefix("-")) and index.startswith("-"):
        raise InputError(path, f"graph index must be 0 or more, got #{index[:20]}")
    if sep and path and index and index.isdigit():
        raise InputError(path, f"graph index must be written with the digits 0-9, got #{index[:20]}")
    return spec, None


def _body_format(text: str) -> str:
    head = text.lstrip()[:200]
    if head.startswith("HloModule"):
        return "hlo"
    if head.startswith("IR {"):
        return "lazy-ir"
    if looks_like_stablehlo(text):
        return "stablehlo"
    if head.startswith(("digraph", "graph ")):
        return "dot"
    return "unknown"


def first_meaningful(text: str) -> str:
    """The first of the first 200 lines that is neither blank nor a `//` comment, stripped
    (line by line: splitting would copy the rest of a 50 MB text as its last piece)."""
    start = 0
    for _ in range(200):
        end = text.find("\n", start)
        s = (text[start:] if end < 0 else text[start:end]).strip()
        if s and not s.startswith("//"):
            return s
        if end < 0:
            break
        start = end + 1
    return ""


def open_source(path: str) -> Source:
    """Locate every graph in `path` (file or `--xla_dump_to` directory) without parsing them.
    A file that exists only compressed (`path.xz`, `path.gz`: a capture's dump) is read so."""
    path = compressed_twin(path)
    if os.path.isdir(path):
        return _open_dump_dir(path)
    text = read_text(path)
    if "## BEGIN_GRAPH" in text:
        return _open_save_file(path, text)
    fmt = _body_format(text)
    first = first_meaningful(text)
    if fmt == "unknown" and (first.startswith("HloModule") or looks_like_hlo(text)):  # BOM, /* */ first
        fmt = "hlo"
    if fmt in ("hlo", "lazy-ir", "stablehlo"):  # one graph: source kind `hlo-file`, ...
        return Source(path, f"{fmt}-file", (Graph(path, text, 1, fmt, GraphInfo(label=path)),))
    if fmt == "dot":
        raise InputError(path, DOT_HINT)
    raise InputError(
        path,
        "not a format xlagraph reads (expected HLO text starting with `HloModule`, StableHLO text "
        "(`module @...`), lazy IR `IR {`, an XLA_SAVE_TENSORS_FILE dump or a --xla_dump_to directory)",
    )


def _open_save_file(path: str, text: str) -> Source:
    """Split an XLA_SAVE_TENSORS_FILE dump into blocks (hlo-text-format.md 2.1)."""
    lines = text.split("\n")
    graphs: list[Graph] = []
    notes: list[str] = []
    i, n = 0, len(lines)
    header: dict[str, object] = {}
    while i < n:
        line = lines[i]
        if line.startswith("[") and line.rstrip().endswith("]") and not line.startswith("[["):
            header = {"kind": line.strip()[1:-1]}
        elif line.startswith("Graph Name: "):
            header["name"] = line[len("Graph Name: ") :].strip()
        elif line.startswith("TensorsGraphInfo:"):
            frames = []
            i += 1
            while i < n and (m := _FRAME_LINE.match(lines[i])):
                frames.append(Frame(m.group(1), portable_path(m.group(2)), int(m.group(3))))
                i += 1
            header["frames"] = tuple(frames)
            continue
        elif (m := _HASHES.match(line)) is not None:
            header["root_hashes"] = tuple(h.strip() for h in m.group(1).split(",") if h.strip())
        elif line.startswith("## BEGIN_GRAPH"):
            start = i + 1
            j = start
            graph_hash = ""
            end_body = -1
            while j < n and not lines[j].startswith("## END_GRAPH"):
                if lines[j].startswith("Graph Hash: "):
                    graph_hash = lines[j][len("Graph Hash: ") :].strip()
                    if end_body < 0:
                        end_body = j
                j += 1
            if j >= n:
                notes.append(
                    f"{path}:{i + 1}: the last graph block is truncated (no `## END_GRAPH`); ignored"
                )
                break
            body = "\n".join(lines[start : end_body if end_body >= 0 else j])
            j += 1
            k = j
            while k < n and not lines[k].strip():
                k += 1
            if k < n and lines[k].startswith("#OUTPUT_SHARDING_BEGIN"):  # read past: nothing uses it
                while k < n and not lines[k].startswith("#OUTPUT_SHARDING_END"):
                    k += 1
                j = k + 1
            index = len(graphs)
            info = GraphInfo(
                index=index,
                graph_hash=graph_hash,
                root_hashes=header.get("root_hashes", ()),  # type: ignore[arg-type]
                frames=header.get("frames", ()),  # type: ignore[arg-type]
                stage=str(header.get("name", "")),
                label=f"{path}#{index}",
            )
            graphs.append(Graph(path, body, start + 1, _body_format(body), info))
            header = {}
            i = j
            continue
        i += 1
    if not graphs:
        raise InputError(path, "XLA_SAVE_TENSORS_FILE dump with no complete graph (truncated?)")
    return Source(path, "save-file", tuple(graphs), tuple(notes))


def _open_dump_dir(path: str) -> Source:
    """The HLO text files of a `--xla_dump_to` directory, in compile order, before before after."""
    found = []
    try:
        names = sorted(os.listdir(path))
    except OSError as e:
        raise InputError(path, f"cannot list the directory: {e.strerror or e}") from None
    dumps = [
        (name, m)
        for name in names
        if (m := DUMP_FILE.match(name)) and not any(s in name for s in _NOT_HLO_SUFFIXES)
    ]
    texts = {m.group(1, 2, 3) for _, m in dumps if m.group(4) == "txt"}
    for name, m in dumps:
        if m.group(4) != "txt" and m.group(1, 2, 3) in texts:
            continue  # XLA dumped the module both ways: its text is read, the proto is the same
        stage = m.group(3)
        order = 0 if stage == "before_optimizations" else (2 if stage[0].isdigit() else 1)
        found.append((int(m.group(1)), order, stage, name))
    if not found:
        return _open_proto_dir(path)
    graphs = []
    limit, total = max_input_bytes(), 0
    for index, (_, _, stage, name) in enumerate(sorted(found)):
        file = os.path.join(path, name)
        total += check_regular_file(file)
        if total > limit:
            raise size_error(path, total, limit)
        info = GraphInfo(index=index, stage=stage, label=file)
        if _PROTO_FILE.search(name):
            graphs.append(Graph(file, functools.partial(read_text, file), 1, "hlo", info))
            continue
        text = read_text(file)
        graphs.append(Graph(file, text, 1, _body_format(text), info))
    return Source(path, "dump-dir", tuple(graphs))


def _open_proto_dir(path: str) -> Source:
    """A folder of one-graph proto files (a compile cache), in the order they were written."""
    found = []
    for root, dirs, files in os.walk(path):
        depth = os.path.relpath(root, path).count(os.sep) + (root != path)
        if depth >= 2:
            dirs[:] = []
        dirs.sort()
        for name in files:
            if _PROTO_FILE.search(name):
                file = os.path.join(root, name)
                try:
                    found.append((os.stat(file).st_mtime_ns, file))
                except OSError:
                    continue
    if not found:
        raise InputError(
            path,
            "directory has no HLO dumps (module_*.txt or module_*.hlo.pb from --xla_dump_to, "
            "or a compile cache's *.hlo_module.pb)",
        )
    graphs = []
    limit, total = max_input_bytes(), 0
    for index, (_, file) in enumerate(sorted(found)):
        total += check_regular_file(file)
        if total > limit:
            raise size_error(path, total, limit)
        label = os.path.relpath(file, path)
        info = GraphInfo(index=index, label=label)
        graphs.append(Graph(file, functools.partial(read_text, file), 1, "hlo", info))
    return Source(path, "dump-dir", tuple(graphs))


def read(graph: Graph) -> Module:
    """Parse one located graph."""
    if graph.format == "hlo":
        try:
            return parse_hlo(graph.text, graph.path, first_line=graph.first_line, info=graph.info)
        except ParseError as e:
            if not _PROTO_FILE.search(graph.path) and not graph.path.endswith((".pb", ".pb.gz", ".pb.xz")):
                raise
            # The line is one of the text printed from the proto, which the user has not seen.
            raise InputError(
                graph.path, f"HLO proto does not hold a valid module: {e.message} (module text line {e.line})"
            ) from None
    if graph.format == "lazy-ir":
        from xlagraph.parse.lazy_ir import parse_lazy_ir  # only lazy-IR dumps need it

        return parse_lazy_ir(graph.text, graph.path, first_line=graph.first_line, info=graph.info)
    if graph.format == "stablehlo":
        return read_stablehlo(graph.text, graph.path, first_line=graph.first_line, info=graph.info)
    if graph.format == "dot":
        raise InputError(graph.label, DOT_HINT)
    raise InputError(graph.path, "graph block is neither HLO, StableHLO nor lazy IR text", graph.first_line)


def select(source: Source, index: int | None, spec: str) -> Graph:
    """The graph `spec` names: the only one, or `#index`."""
    count = len(source.graphs)
    if index is None:
        if count == 1:
            return source.graphs[0]
        raise InputError(
            source.path,
            f"holds {count} graphs: pick one with {source.path}#K (0 to {count - 1}); "
            f"`xlagraph graphs {source.path}` lists them",
        )
    if index >= count:
        raise InputError(source.path, f"graph #{index} out of range: it holds {count} (0 to {count - 1})")
    return source.graphs[index]


def load_module(spec: str) -> Module:
    """Read the one graph `spec` (`PATH` or `PATH#K`) names."""
    path, index = split_spec(spec)
    source = open_source(path)
    graph = select(source, index, spec)
    module = read(graph)
    if index is not None and source.kind in ("hlo-file", "stablehlo-file", "lazy-ir-file"):
        return module
    return replace_label(module, graph.label)


def replace_label(module: Module, label: str) -> Module:
    return replace(module, info=replace(module.info, label=label))


_SINGLE_HEAD_BYTES = 1 << 16


def single_graph_file(path: str) -> bool:
    """A regular file whose text starts as one graph (`HloModule`, lazy IR `IR {`, a StableHLO
    `module @`): never a whole
    run, which starts with a save file's block header. False when unsure (the full read decides,
    and says what is wrong with the file)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        # O_NONBLOCK: a file swapped for a FIFO since the check must not make this wait.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb", buffering=0) as f:
            head = f.read(_SINGLE_HEAD_BYTES)
    except (OSError, ValueError):
        return False
    starts = (b"HloModule", b"IR {", b"module @", b"module {", b"func.func")
    return head.lstrip().startswith(starts) and b"## BEGIN_GRAPH" not in head
