"""Shardy's mesh and axis names are bound names (issue 37, rust/src/canon/shardy.rs): a module
whose meshes and axes are renamed consistently is the same program, and one whose mesh has
another axis size, or one of whose shardings names another axis, is not.

Metamorphic: every real JAX module of the corpus (tests/metamorphic/check.py's) with a Shardy
mesh that its shardings name, transformed in the text by the rules below (written apart from
the engine): renamed, it must diff `identical` both ways; with one axis size changed, or one
dimension of one sharding no longer split, `different` with a `sharding` cause, whose changes
say each side's shardings in the names its module wrote (never the canonical `\\"#0\\"` or
`@mesh<[2,2]>`), a changed mesh written out in place.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from tests.metamorphic.check import corpus
from xlagraph.diff import DiffResult, diff_files

MAX_BYTES = 40_000
_MESHES = re.compile(r"xla\.sdy\.meshes=(\"(?:[^\"\\]|\\.)*\"|\{.*?\}\})")
_MESH = re.compile(r"(\w+) = #sdy\.mesh<\[([^\]]*)\]")
_AXIS = re.compile(r'\\?"(\w+)\\?"=(\d+)')
# The Shardy entries of an instruction that name meshes and axes, with their quoted value.
_ENTRY = re.compile(r"(xla\.sdy\.(?:sharding|in_shardings|out_shardings|manual_axes)=)\"((?:[^\"\\]|\\.)*)\"")


def _meshes(text: str) -> dict[str, list[tuple[str, str]]]:
    """{mesh name: [(axis, size)]} of the header's `xla.sdy.meshes`."""
    header = text.split("\n", 1)[0]
    found = _MESHES.search(header)
    if not found:
        return {}
    return {m.group(1): _AXIS.findall(m.group(2)) for m in _MESH.finditer(found.group(1))}


def _in_entries(text: str, rewrite) -> str:  # type: ignore[no-untyped-def]
    """`text` with the value of each Shardy sharding entry of the body rewritten."""
    header, body = text.split("\n", 1)
    return header + "\n" + _ENTRY.sub(lambda m: m.group(1) + '"' + rewrite(m.group(2)) + '"', body)


def renamed(text: str) -> str:
    """Every mesh and axis given a new name, consistently, in the header and the shardings."""
    meshes = _meshes(text)
    axes = {a: f"ren{i}" for i, a in enumerate(dict.fromkeys(a for ax in meshes.values() for a, _ in ax))}
    names = {m: f"renamed_{m}" for m in meshes}

    def body(value: str) -> str:
        value = re.sub(r'\\"(\w+)\\"', lambda m: f'\\"{axes.get(m.group(1), m.group(1))}\\"', value)
        return re.sub(r"@(\w+)", lambda m: "@" + names.get(m.group(1), m.group(1)), value)

    header, rest = text.split("\n", 1)
    meshes_text = _MESHES.search(header)
    assert meshes_text is not None
    new = _MESH.sub(lambda m: f"{names[m.group(1)]} = #sdy.mesh<[{m.group(2)}]", meshes_text.group(0))
    new = _AXIS.sub(lambda m: m.group(0).replace(m.group(1), axes[m.group(1)]), new)
    header = header.replace(meshes_text.group(0), new)
    return _in_entries(header + "\n" + rest, body)


def resized(text: str) -> str:
    """The first axis of the first mesh twice as large."""
    header, rest = text.split("\n", 1)
    axis = _AXIS.search(header[header.index("xla.sdy.meshes") :])
    assert axis is not None
    old = axis.group(0)
    return header.replace(old, old[: -len(axis.group(2))] + str(2 * int(axis.group(2))), 1) + "\n" + rest


def unsplit(text: str) -> str:
    """The first dimension split over one axis in a sharding (not a shard map's), left whole;
    "" where no sharding has one."""
    done: list[bool] = []

    def body(value: str) -> str:
        if done or "manual_axes" in value:
            return value
        new = re.sub(r'\{\\"\w+\\"\}', "{}", value, count=1)
        if new != value:
            done.append(True)
        return new

    out = _in_entries(text, body)
    return out if out != text else ""


@cache
def _modules() -> tuple[tuple[str, str], ...]:
    """(label, text) of the corpus' modules with a mesh of axes that a sharding names."""
    out = []
    for label, text in corpus(max_bytes=MAX_BYTES):
        meshes = _meshes(text)
        named = [m for m, axes in meshes.items() if axes and f"@{m}" in text.split("\n", 1)[1]]
        if named:
            out.append((label, text))
    return tuple(out)


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_enough_modules_have_meshes() -> None:
    assert len(_modules()) >= 30, len(_modules())


def test_renamed_meshes_and_axes_are_identical(tmp_path: Path) -> None:
    wrong = []
    for i, (label, text) in enumerate(_modules()):
        new = renamed(text)
        assert new != text, label
        a, b = _write(tmp_path, f"{i}a.hlo", text), _write(tmp_path, f"{i}b.hlo", new)
        for x, y in ((a, b), (b, a)):
            result = diff_files(x, y)
            if result.verdict != "identical":
                wrong.append((label, result.verdict, sorted({c.kind.value for c in result.differences})))
    assert not wrong, wrong


# What only the canonical form spells (rust/src/canon/shardy.rs): an axis by its place, a mesh
# by its sizes or its number of devices.
_CANONICAL = re.compile(r'\\"#\d+\\"|@mesh<\[?\d')
_QUOTED = re.compile(r'\\"(\w+)\\"')


def _said(result: DiffResult, a: str, b: str) -> list[str]:
    """What the Shardy changes of `result` (A's text `a`, B's `b`) say wrongly: a canonical
    spelling, or an axis name the side's module does not have."""
    wrong = []
    axes = [{x for ax in _meshes(t).values() for x, _ in ax} for t in (a, b)]
    for ch in (ch for c in result.differences for ch in c.changes if "xla.sdy." in ch.old + ch.new):
        for side, text in enumerate((ch.old, ch.new)):
            if _CANONICAL.search(text):
                wrong.append(f"canonical: {text}")
            named = {n for n in _QUOTED.findall(text) if not n.startswith("xla")}
            if named - axes[side]:
                wrong.append(f"not {'AB'[side]}'s axes {sorted(named - axes[side])}: {text}")
    return wrong


def _sharding_changed(tmp_path: Path, transform, check=None) -> None:  # type: ignore[no-untyped-def]
    """`transform`ed, each module differs by a `sharding` cause said in each side's names (and
    `check(result, a_text, b_text)` finds nothing wrong in it)."""
    wrong, tried = [], 0
    for i, (label, text) in enumerate(_modules()):
        new = transform(text)
        if not new:
            continue
        tried += 1
        a, b = _write(tmp_path, f"{i}a.hlo", text), _write(tmp_path, f"{i}b.hlo", new)
        for (x, tx), (y, ty) in (((a, text), (b, new)), ((b, new), (a, text))):
            result = diff_files(x, y)
            kinds = {c.kind.value for c in result.differences}
            if result.verdict != "different" or "sharding" not in kinds:
                wrong.append((label, result.verdict, sorted(kinds)))
            said = _said(result, tx, ty) + (check(result, tx, ty) if check else [])
            wrong += [(label, s) for s in said]
    assert tried >= 20, tried
    assert not wrong, wrong


def _mesh_written_out(result: DiffResult, a: str, b: str) -> list[str]:
    """A resized mesh is written out on each side, with that side's sizes."""
    texts = [ch.old + ch.new for c in result.differences for ch in c.changes if "xla.sdy." in ch.old + ch.new]
    wrong = []
    for t in (a, b):
        name, axes = next((m, ax) for m, ax in _meshes(t).items() if ax)
        spelled = f"@{name}<[" + ", ".join(f'\\"{x}\\"={n}' for x, n in axes)
        if not any(spelled in text for text in texts):
            wrong.append(f"{spelled} not in {texts[:1]}")
    return wrong


def test_an_axis_of_another_size_is_a_sharding_change(tmp_path: Path) -> None:
    _sharding_changed(tmp_path, resized, _mesh_written_out)


def test_another_spec_is_a_sharding_change(tmp_path: Path) -> None:
    """The dimension left whole is said with its axis' name on the side that splits it."""

    def axis_named(result: DiffResult, a: str, b: str) -> list[str]:
        changes = [ch for c in result.differences for ch in c.changes if "xla.sdy." in ch.old + ch.new]
        if any(_QUOTED.search(ch.old + ch.new) for ch in changes):
            return []
        return [f"no axis named: {changes[:1]}"]

    _sharding_changed(tmp_path, unsplit, axis_named)


def test_renamed_and_changed_says_each_sides_names(tmp_path: Path) -> None:
    """Both renamed and one dimension left whole: different, each side's shardings in its own
    module's names (A's for A's, the renamed ones for B's)."""
    _sharding_changed(tmp_path, lambda t: unsplit(renamed(t)))


def test_renamed_stays_different_where_the_specs_swap(tmp_path: Path) -> None:
    """A renaming that is not consistent (two axes' names swapped in the shardings only) is
    another program: never `identical`."""
    text = next(t for _, t in _modules() if len(next(iter(_meshes(t).values()))) >= 2 and '{\\"' in t)
    (x, _), (y, _) = next(iter(_meshes(text).values()))[:2]
    qx, qy = f'\\"{x}\\"', f'\\"{y}\\"'
    swapped = _in_entries(text, lambda v: v.replace(qx, "\0").replace(qy, qx).replace("\0", qy))
    assert swapped != text
    a, b = _write(tmp_path, "a.hlo", text), _write(tmp_path, "b.hlo", swapped)
    result = diff_files(a, b)
    assert result.verdict == "different" and "sharding" in {c.kind.value for c in result.differences}
