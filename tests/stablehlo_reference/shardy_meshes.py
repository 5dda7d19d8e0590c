"""A module's Shardy meshes as XLA's export keeps them, and its shardings read against them.

Before converting, the export merges meshes of the same devices (the same count, or none, and the
same `device_ids`) into one, the "main" mesh (sdy_round_trip/dedup_meshes.cc): the one with real
axes (a name not starting with `_`), then the most axes of more than one device, then the first;
each other mesh's axes are mapped onto the main mesh's (sub-)axes in order, and every sharding
that names it is rewritten to name the main mesh, its axes replaced (consecutive sub-axes of an
axis merged). The merged meshes leave `xla.sdy.meshes`, and the Shardy text XLA keeps in
`xla.sdy.sharding` is the rewritten one. This module does the same, so that such a module reads
as XLA's HLO of it; a mesh whose axes do not map is kept, as the export keeps it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from tests.stablehlo_reference.shardy import (
    AxisRef,
    Mesh,
    MeshError,
    TensorSharding,
    hlo_sharding,
    mesh_error,
    parse_mesh,
    parse_per_value,
    parse_sharding,
)
from tests.stablehlo_reference.structure import StructureError

__all__ = ["Meshes", "read_meshes"]

AxisMap = dict[str, list[AxisRef]]


@dataclass
class Meshes:
    """The meshes XLA's export keeps, and the merged ones: name -> (main mesh, axis map)."""

    kept: dict[str, Mesh]
    merged: dict[str, tuple[str, AxisMap]]

    def attribute(self) -> str:
        """The module's `xla.sdy.meshes`, as the export writes it (by name)."""
        return "{" + ", ".join(f"{n} = #sdy.mesh{self.kept[n].text}" for n in sorted(self.kept)) + "}"

    def sharding(self, text: str, line: int) -> tuple[str, str]:
        """`#sdy.sharding<...>` -> (its HLO sharding, the Shardy text XLA keeps: printed again, as
        XLA prints it)."""
        try:
            sharding = self._rewrite(parse_sharding(text))
            return hlo_sharding(sharding, self.kept), "#sdy.sharding" + sharding.text()
        except MeshError as e:
            raise mesh_error(e, line) from None

    def per_value(self, text: str, line: int) -> tuple[list[str], str]:
        """`#sdy.sharding_per_value<[...]>` -> (one HLO sharding per result, the text XLA keeps)."""
        try:
            found = [self._rewrite(s) for s in parse_per_value(text)]
            text = "#sdy.sharding_per_value<[" + ", ".join(s.text() for s in found) + "]>"
            return [hlo_sharding(s, self.kept) for s in found], text
        except MeshError as e:
            raise mesh_error(e, line) from None

    def _rewrite(self, sharding: TensorSharding) -> TensorSharding:
        """The sharding on its main mesh (replaceAxesInSharding)."""
        if sharding.mesh not in self.merged:
            return sharding
        main_name, axis_map = self.merged[sharding.mesh]
        main = self.kept[main_name]

        def refs(old: tuple[AxisRef, ...]) -> tuple[AxisRef, ...]:
            out: list[AxisRef] = []
            for ref in old:
                _map_ref(ref, out, main, axis_map)
            return tuple(out)

        return replace(
            sharding,
            mesh=main_name,
            dims=tuple(refs(d) for d in sharding.dims),
            replicated=refs(sharding.replicated),
            unreduced=refs(sharding.unreduced),
        )


def read_meshes(found: list[tuple[str, str, int]]) -> Meshes:
    """The module's `sdy.mesh`es (name, text, line), merged as XLA's export merges them."""
    meshes: dict[str, Mesh] = {}
    for name, text, line in found:
        if name in meshes:
            raise StructureError(f"Shardy: mesh @{name} is defined twice", line)
        try:
            meshes[name] = parse_mesh(name, text)
        except MeshError as e:
            raise mesh_error(e, line) from None
    if len(meshes) < 2:
        return Meshes(meshes, {})
    mains: dict[tuple[int, tuple[int, ...]], Mesh] = {}
    for mesh in meshes.values():
        key = _devices(mesh)
        main = mains.setdefault(key, mesh)
        if main is not mesh and _better(mesh, main):
            mains[key] = mesh
    merged: dict[str, tuple[str, AxisMap]] = {}
    for mesh in meshes.values():
        main = mains[_devices(mesh)]
        if main is not mesh and (axis_map := _map_axes(mesh, main)) is not None:
            merged[mesh.name] = (main.name, axis_map)
    return Meshes({n: m for n, m in meshes.items() if n not in merged}, merged)


def _devices(mesh: Mesh) -> tuple[int, tuple[int, ...]]:
    """MeshDeviceIdentifier: the device count (-1 for a mesh of no axes) and the device ids."""
    return (math.prod(s for _, s in mesh.axes) if mesh.axes else -1), mesh.device_ids


def _fake(mesh: Mesh) -> bool:
    return bool(mesh.axes) and mesh.axes[0][0].startswith("_")


def _wide(mesh: Mesh) -> int:
    return sum(1 for _, s in mesh.axes if s > 1)


def _better(mesh: Mesh, main: Mesh) -> bool:
    """Whether `mesh`, met after `main`, becomes the main mesh of their devices."""
    if _fake(mesh) and not _fake(main):
        return False
    return not (_fake(mesh) == _fake(main) and _wide(mesh) <= _wide(main))


def _map_axes(target: Mesh, main: Mesh) -> AxisMap | None:
    """mapTargetAxesToMainAxes: each of `target`'s axes as (sub-)axes of `main`'s, in order;
    None where the sizes do not divide."""
    out: AxisMap = {}
    t, m = _Cursor(target), _Cursor(main)
    while m.index < len(main.axes) and t.index < len(target.axes):
        consume, larger = sorted((m.remaining, t.remaining))
        if larger % consume:
            return None
        name, size = main.axes[m.index]
        ref = AxisRef(name) if size == consume else AxisRef(name, m.pre, consume)
        out.setdefault(target.axes[t.index][0], []).append(ref)
        m.consume(consume)
        t.consume(consume)
    return out


class _Cursor:
    """Where the walk over one mesh's axes is: the axis, the devices before, the size left."""

    def __init__(self, mesh: Mesh) -> None:
        self.axes = mesh.axes
        self.index, self.pre, self.remaining = -1, 1, 1
        self.advance()

    def advance(self) -> None:
        self.index += 1
        while self.index < len(self.axes) and self.axes[self.index][1] == 1:
            self.index += 1
        self.pre = 1
        if self.index < len(self.axes):
            self.remaining = self.axes[self.index][1]

    def consume(self, size: int) -> None:
        self.remaining //= size
        if self.remaining == 1:
            self.advance()
        else:
            self.pre *= size


def _map_ref(old: AxisRef, out: list[AxisRef], main: Mesh, axis_map: AxisMap) -> None:
    """addOrMergeNewAxisRefAttr: `old` (an axis of the merged mesh) as `main`'s (sub-)axes."""
    refs = axis_map.get(old.axis)
    if refs is None:  # an axis of size 1
        return
    if not old.size:
        for ref in refs:
            _add_or_merge(out, ref, main)
        return
    pre, size = old.pre, old.size
    for ref in refs:
        length = ref.length(main)
        if pre >= length:
            if pre % length:
                raise MeshError(f"sub-axis {old} does not map onto mesh @{main.name}")
            pre //= length
            continue
        if length % pre:
            raise MeshError(f"sub-axis {old} does not map onto mesh @{main.name}")
        used = min(size, length // pre)
        _add_or_merge(out, ref if used == length else AxisRef(ref.axis, pre * ref.pre, used), main)
        if size % used:
            raise MeshError(f"sub-axis {old} does not map onto mesh @{main.name}")
        pre, size = 1, size // used
        if size == 1:
            break


def _add_or_merge(out: list[AxisRef], ref: AxisRef, mesh: Mesh) -> None:
    """sdy::addAxisOrMerge: consecutive sub-axes of one axis become one (the axis, if whole)."""
    if out:
        last = out[-1]
        if last.axis == ref.axis and last.size and ref.size and last.pre * last.size == ref.pre:
            size = last.size * ref.size
            out[-1] = AxisRef(ref.axis) if last.pre == 1 and size == mesh.size_of(ref.axis) else (
                AxisRef(ref.axis, last.pre, size)
            )
            return
    out.append(ref)
