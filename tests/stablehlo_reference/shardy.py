"""Shardy (`sdy`) shardings as XLA's export writes them (issue 38).

JAX's default partitioner and PJRT plugins (tt-xla) write shardings in Shardy's dialect: meshes
(`sdy.mesh @mesh = <["x"=2, "y"=4]>`, optionally `device_ids=[...]`) and tensor shardings that
name a mesh's axes per dimension (`#sdy.sharding<@mesh, [{"x"}, {"y":(1)2, ?}], replicated=
{...}, unreduced={...}>`). XLA's export (`Lowered.as_text(dialect="hlo")`: the Shardy round trip,
xla/service/spmd/shardy/sdy_round_trip and stablehlo_round_trip/export_shardings.cc) writes each
as the HLO sharding of the same devices (`{devices=[2,1,4]<=[8] last_tile_dim_replicate}`) and
keeps the Shardy text in the frontend attribute `xla.sdy.sharding` (open dimensions, priorities
and axis names, which the HLO sharding cannot say). This module does the same conversion, step by
step as `convertToHloSharding`, `HloSharding::Subgroup`, `PartialTile` and `IotaTileAssignment`
canonicalize and print it, so that the sharding causes see what they see in XLA's HLO.

shardy_meshes.py merges meshes of the same devices as the export does. What this reader cannot
write as XLA does is refused by name: a mesh written inline in a sharding (the export lifts it
into a new mesh symbol) and every `sdy` operation but `sdy.sharding_constraint` and
`sdy.manual_computation` (ops_shardy.py, ops_manual.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import pairwise, product

from tests.stablehlo_reference.structure import StructureError, split_top

__all__ = [
    "AxisRef",
    "Mesh",
    "MeshError",
    "TensorSharding",
    "hlo_sharding",
    "parse_mesh",
    "parse_per_value",
    "parse_sharding",
    "tuple_sharding",
]

_AXIS = re.compile(r'^"([^"]+)"(?::\((\d+)\)(\d+))?$')
_MESH_AXIS = re.compile(r'^"([^"]+)"\s*=\s*(\d+)$')


class MeshError(ValueError):
    """A Shardy attribute this module does not convert (the caller names the line)."""


@dataclass(frozen=True)
class Mesh:
    """`sdy.mesh @name = <[axes], device_ids=[...]>`: axes `(name, size)` in order."""

    name: str
    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...]
    text: str  # `<["x"=2, "y"=4]>` as written, for the module's `xla.sdy.meshes`

    def size_of(self, axis: str) -> int:
        for name, size in self.axes:
            if name == axis:
                return size
        raise MeshError(f"axis {axis!r} is not an axis of mesh @{self.name}")


@dataclass(frozen=True)
class AxisRef:
    """A mesh axis, or its sub-axis `"x":(pre)size` (the devices `pre` apart, `size` of them)."""

    axis: str
    pre: int = 1
    size: int = 0  # 0: the whole axis

    def length(self, mesh: Mesh) -> int:
        return self.size or mesh.size_of(self.axis)


@dataclass(frozen=True)
class TensorSharding:
    """A tensor's sharding: per dimension its axes, whether it is open to propagation (`?`) and
    its priority (`p1`; propagation's, as open is: neither enters the HLO sharding)."""

    mesh: str
    dims: tuple[tuple[AxisRef, ...], ...]
    replicated: tuple[AxisRef, ...]
    unreduced: tuple[AxisRef, ...]
    opened: tuple[bool, ...] = ()
    priorities: tuple[str, ...] = ()

    def text(self) -> str:
        """As MLIR prints it, inside `#sdy.sharding`: `<@mesh, [{"x", ?}p1, {}], replicated={"y"}>`."""
        dims = []
        for k, axes in enumerate(self.dims):
            words = [_ref_text(r) for r in axes] + (["?"] if self.opened and self.opened[k] else [])
            dims.append("{" + ", ".join(words) + "}" + (self.priorities[k] if self.priorities else ""))
        out = f"<@{self.mesh}, [{', '.join(dims)}]"
        for key, refs in (("replicated", self.replicated), ("unreduced", self.unreduced)):
            if refs:
                out += f", {key}={{{', '.join(_ref_text(r) for r in refs)}}}"
        return out + ">"


def _ref_text(ref: AxisRef) -> str:
    return f'"{ref.axis}"' + (f":({ref.pre}){ref.size}" if ref.size else "")


# -- reading -----------------------------------------------------------------------------------


def parse_mesh(name: str, text: str) -> Mesh:
    """`<["x"=2, "y"=4], device_ids=[...]>` (or `#sdy.mesh<...>`) of mesh `name`."""
    body = text.strip().removeprefix("#sdy.mesh")
    if not (body.startswith("<") and body.endswith(">")):
        raise MeshError(f"mesh @{name}: malformed {text[:60]}")
    parts = split_top(body[1:-1])
    if not parts or not parts[0].startswith("["):
        raise MeshError(f"mesh @{name}: malformed {text[:60]}")
    axes = []
    for part in split_top(parts[0][1:-1]):
        m = _MESH_AXIS.match(part)
        if m is None or int(m.group(2)) < 1:
            raise MeshError(f"mesh @{name}: malformed axis {part[:40]}")
        axes.append((m.group(1), int(m.group(2))))
    if len({a for a, _ in axes}) != len(axes):
        raise MeshError(f"mesh @{name}: an axis named twice")
    ids: tuple[int, ...] = ()
    for part in parts[1:]:
        key, _, value = part.partition("=")
        if key.strip() != "device_ids":
            raise MeshError(f"mesh @{name}: {key.strip()} is not read")
        ids = tuple(int(x) for x in re.findall(r"-?\d+", value))
    if ids and len(ids) != math.prod(s for _, s in axes):
        raise MeshError(f"mesh @{name}: {len(ids)} device ids for {math.prod(s for _, s in axes)} devices")
    return Mesh(name, tuple(axes), ids, body)


def _axis_refs(text: str) -> tuple[AxisRef, ...]:
    refs = []
    for part in split_top(text.strip()[1:-1]):
        m = _AXIS.match(part)
        if m is None or (m.group(2) is not None and (int(m.group(2)) < 1 or int(m.group(3)) < 2)):
            raise MeshError(f"axis {part[:40]} is not read")
        refs.append(AxisRef(m.group(1), int(m.group(2) or 1), int(m.group(3) or 0)))
    return tuple(refs)


def parse_sharding(text: str) -> TensorSharding:
    """`#sdy.sharding<@mesh, [{"x"}, {?}]p1, replicated={..}, unreduced={..}>` or `<@mesh, ...>`."""
    body = text.strip().removeprefix("#sdy.sharding")
    if not (body.startswith("<") and body.endswith(">")):
        raise MeshError(f"sharding {text[:60]} is not read")
    parts = split_top(body[1:-1])
    if len(parts) < 2 or not parts[0].startswith("@"):
        raise MeshError(f"sharding {text[:60]}: a mesh written inline is not read (only @name)")
    mesh = parts[0][1:].strip('"')
    dims, opened, priorities = [], [], []
    for dim in split_top(parts[1].strip()[1:-1]):
        m = re.match(r"^(\{.*\})(p\d+)?$", dim.strip())
        if m is None:
            raise MeshError(f"dimension sharding {dim[:40]} is not read")
        words = split_top(m.group(1)[1:-1])
        dims.append(_axis_refs("{" + ", ".join(w for w in words if w != "?") + "}"))
        opened.append("?" in words)
        priorities.append(m.group(2) or "")
    found = {"replicated": (), "unreduced": ()}
    for part in parts[2:]:
        key, _, value = part.partition("=")
        if key.strip() not in found:
            raise MeshError(f"sharding {text[:60]}: {key.strip()} is not read")
        found[key.strip()] = _axis_refs(value)
    return TensorSharding(
        mesh, tuple(dims), found["replicated"], found["unreduced"], tuple(opened), tuple(priorities)
    )


def parse_per_value(text: str) -> list[TensorSharding]:
    """`#sdy.sharding_per_value<[<@mesh, [...]>, ...]>`: one sharding per result."""
    body = text.strip().removeprefix("#sdy.sharding_per_value")
    if not (body.startswith("<[") and body.endswith("]>")):
        raise MeshError(f"sharding {text[:60]} is not read")
    return [parse_sharding(part) for part in split_top(body[2:-2])]


# -- XLA's tile assignments --------------------------------------------------------------------


@dataclass(frozen=True)
class _Iota:
    """IotaTileAssignment: iota over `reshape`, transposed by `perm`, reshaped to `dims`."""

    dims: tuple[int, ...]
    reshape: tuple[int, ...]
    perm: tuple[int, ...]

    def text(self) -> str:
        out = f"devices=[{_join(self.dims)}]<=[{_join(self.reshape)}]"
        return out + (f"T({_join(self.perm)})" if len(self.reshape) > 1 else "")

    def values(self) -> list[int]:
        return _transposed(list(range(math.prod(self.reshape))), list(self.reshape), list(self.perm))


@dataclass(frozen=True)
class _Array:
    dims: tuple[int, ...]
    values_: tuple[int, ...]

    def text(self) -> str:
        return f"devices=[{_join(self.dims)}]{_join(self.values_)}"

    def values(self) -> list[int]:
        return list(self.values_)


def _join(xs: tuple[int, ...] | list[int]) -> str:
    return ",".join(str(x) for x in xs)


def _transposed(values: list[int], dims: list[int], perm: list[int]) -> list[int]:
    """The row-major elements of `values` (shaped `dims`) transposed by `perm`."""
    strides = [math.prod(dims[k + 1 :]) for k in range(len(dims))]
    out_dims = [dims[p] for p in perm]
    return [
        values[sum(i * strides[p] for i, p in zip(index, perm, strict=True))]
        for index in product(*(range(d) for d in out_dims))
    ]


def _canonical_iota(dims: list[int], perm: list[int]) -> tuple[list[int], list[int]]:
    """CanonicalizeIotaDims: size-1 dimensions dropped, runs in major-to-minor order merged."""
    dims, perm = list(dims), list(perm)
    if len(dims) <= 1:
        return dims, perm
    while True:
        keep = [d != 1 for d in dims]
        if not all(keep):
            new_index = {}
            for i, k in enumerate(keep):
                if k:
                    new_index[i] = len(new_index)
            perm = [new_index[p] for p in perm if keep[p]]
            dims = [d for d in dims if d != 1]
        changed = False
        base = 0
        for i in range(1, len(dims)):
            if perm[base] + (i - base) == perm[i]:
                dims[perm[base]] *= dims[perm[i]]
                dims[perm[i]] = 1
                changed = True
            else:
                base = i
        if not changed:
            return dims, perm


def _iota(dims: list[int], reshape: list[int], perm: list[int]) -> _Iota:
    """IotaTileAssignment::Create."""
    r, p = _canonical_iota(reshape, perm)
    if not r:
        r, p = [1], [0]
    return _Iota(tuple(dims), tuple(r), tuple(p))


def _group_minor_sorted(dims: list[int], perm: list[int], group: int) -> tuple[list[int], list[int]] | None:
    """GroupMinorIotaDimsSorted: the iota's minor dimensions grouped to `group` devices, sorted."""
    grouped, split = 0, None
    for i in range(len(perm) - 1, -1, -1):
        size = dims[perm[i]]
        if size <= group:
            if group % size:
                return None
            group //= size
            grouped += 1
        else:
            if size % group:
                return None
            split = (perm[i], size // group)
            grouped += 1
            group = 1
            break
    if split is None:
        new_perm = list(perm)
        new_perm[len(perm) - grouped :] = sorted(new_perm[len(perm) - grouped :])
        return list(dims), new_perm
    at, size = split
    new_dims = [*dims[:at], size, dims[at] // size, *dims[at + 1 :]]
    new_perm = [0] * (len(perm) + 1)
    perm_split = 0
    for i, p in enumerate(perm):
        new_perm[i] = p if p <= at else p + 1
        if p == at:
            perm_split = i
            break
    new_perm[perm_split + 1] = new_perm[perm_split] + 1
    for i in range(perm_split + 2, len(new_perm)):
        p = perm[i - 1]
        new_perm[i] = p if p <= at else p + 1
    tail = len(new_perm) - grouped
    new_perm[tail:] = sorted(new_perm[tail:])
    return new_dims, new_perm


def _partial_tile(tiles: _Iota | _Array) -> _Iota | _Array | None:
    """HloSharding::PartialTile: the last dimension replicates; None: `{replicated}`."""
    n = math.prod(tiles.dims)
    group = tiles.dims[-1]
    if len(tiles.dims) == 1 or group == n:
        return None
    if isinstance(tiles, _Iota):
        if tiles.reshape[tiles.perm[-1]] == group:
            return tiles
        got = _group_minor_sorted(list(tiles.reshape), list(tiles.perm), group)
        if got is not None:
            return _iota(list(tiles.dims), *got)
    values = tiles.values()
    for k in range(0, n, group):
        values[k : k + group] = sorted(values[k : k + group])
    return _Array(tiles.dims, tuple(values))


# -- Shardy -> HLO -----------------------------------------------------------------------------


def _ordered_axis_refs(sharding: TensorSharding, mesh: Mesh) -> list[AxisRef]:
    """getOrderedAxisRefs: the mesh's axes in order, each split at every sub-axis the sharding
    names."""
    cuts: dict[str, set[int]] = {name: {1, size} for name, size in mesh.axes}
    for ref in [r for d in sharding.dims for r in d] + list(sharding.replicated + sharding.unreduced):
        if ref.axis not in cuts:
            raise MeshError(f"axis {ref.axis!r} is not an axis of mesh @{mesh.name}")
        if ref.size:
            whole = mesh.size_of(ref.axis)
            if whole % (ref.pre * ref.size) or ref.size == whole:
                raise MeshError(f"sub-axis {_ref_text(ref)} is not one of mesh @{mesh.name}")
            cuts[ref.axis] |= {ref.pre, ref.pre * ref.size}
    out = []
    for name, _ in mesh.axes:
        points = sorted(cuts[name])
        if len(points) <= 2:
            out.append(AxisRef(name))
            continue
        out += [AxisRef(name, a, b // a) for a, b in pairwise(points)]
    return out


def _same(a: AxisRef, b: AxisRef, mesh: Mesh) -> bool:
    whole = mesh.size_of(a.axis)
    return a.axis == b.axis and (a.pre, a.size or whole) == (b.pre, b.size or whole)


def hlo_sharding(sharding: TensorSharding, meshes: dict[str, Mesh]) -> str:
    """The HLO sharding XLA's export writes for `sharding` (convertToHloSharding)."""
    mesh = meshes.get(sharding.mesh)
    if mesh is None:
        raise MeshError(f"sharding names mesh @{sharding.mesh}, which the module does not define")
    if not mesh.axes:
        return f"{{maximal device={mesh.device_ids[0]}}}" if mesh.device_ids else "{replicated}"
    tile = [1] * len(sharding.dims)
    placed: list[AxisRef] = []  # sharded, then unreduced: their positions in the transpose
    for k, axes in enumerate(sharding.dims):
        for ref in axes:
            tile[k] *= ref.length(mesh)
            placed.append(ref)
    types = []
    if sharding.unreduced:
        types.append("unreduced")
        tile.append(math.prod(ref.length(mesh) for ref in sharding.unreduced))
        placed += sharding.unreduced
    refs = _ordered_axis_refs(sharding, mesh)
    perm = [0] * len(refs)
    replicated, position, matched = 1, len(placed), 0
    for k, ref in enumerate(refs):
        at = next((i for i, p in enumerate(placed) if _same(p, ref, mesh)), None)
        if at is None:
            perm[position] = k
            position += 1
            replicated *= ref.length(mesh)
        else:
            perm[at] = k
            matched += 1
    if matched != len(placed) or len(placed) != len(set(placed)):
        raise MeshError("a sharding that names an axis twice, or part of one not as a sub-axis, is not read")
    if replicated > 1:
        tile.append(replicated)
        types.append("replicated")
    sizes = [ref.length(mesh) for ref in refs]
    tiles: _Iota | _Array
    if mesh.device_ids:
        values = _transposed(list(mesh.device_ids), sizes, perm)
        tiles = _Array(tuple(tile), tuple(values))
    else:
        tiles = _iota(tile, sizes, perm)
    return _subgroup(tiles, types)


def _subgroup(tiles: _Iota | _Array, types: list[str]) -> str:
    """HloSharding::Subgroup and its printing, for the types Shardy's export makes (unreduced
    before replicated, each of more than one device)."""
    if not types:
        return "{" + tiles.text() + "}"
    rank = len(tiles.dims) - len(types)
    if len(set(types)) == 1 and math.prod(tiles.dims[:rank]) == 1:
        return "{" + types[0] + "}"
    kept = [k for k, size in enumerate(tiles.dims[rank:]) if size > 1]  # a subgroup of one device
    if len(kept) != len(types):
        dims = tiles.dims[:rank] + tuple(tiles.dims[rank + k] for k in kept)
        types = [types[k] for k in kept]
        if isinstance(tiles, _Iota):
            tiles = _Iota(dims, tiles.reshape, tiles.perm)
        else:
            tiles = _Array(dims, tiles.values_)
        if not types:
            return "{" + tiles.text() + "}"
    if types[-1] != "replicated":
        return "{" + tiles.text() + " last_tile_dims={" + ", ".join(types) + "}}"
    partial = _partial_tile(tiles)
    if partial is None:
        return "{replicated}"
    if types == ["replicated"]:
        return "{" + partial.text() + " last_tile_dim_replicate}"
    return "{" + partial.text() + " last_tile_dims={" + ", ".join(types) + "}}"


def tuple_sharding(shardings: list[str]) -> str:
    return "{" + ", ".join(shardings) + "}"


def mesh_error(e: MeshError, line: int) -> StructureError:
    return StructureError(f"Shardy: {e}", line)
