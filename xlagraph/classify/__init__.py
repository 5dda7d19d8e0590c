"""Name the causes of the differences between two matched modules.

Reading order mirrors how a PyTorch/XLA engineer reasons: first the interface of the graph
(parameters: permutation and shapes; outputs: added, removed, permuted), then collectives as one
sequence, then changes inside matched instructions (constants, attributes), and last whatever is
left as structural regions. A change that follows from another (a shape that changes because an
input's shape changed, a constant equal to a batch dimension that changed) is folded into the
cause it follows from instead of being reported again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from itertools import pairwise

import networkx as nx

from xlagraph.canonical import CanonicalComputation, CanonicalModule
from xlagraph.canonical.hashes import COMMUTATIVE, IGNORED_ATTRIBUTES, normalize_attribute
from xlagraph.classify.causes import HINTS, Cause, CauseKind, Change, Moved
from xlagraph.classify.collectives import collectives, is_collective, summarize
from xlagraph.ir import COMPUTATION_ATTRIBUTES, Instruction, strip_layout
from xlagraph.match import Matching
from xlagraph.match.bottom_up import users_of

__all__ = [
    "Cause",
    "CauseKind",
    "Change",
    "Moved",
    "classify_computation",
    "classify_module_level",
    "input_dim_changes",
]

_MAX_LISTED = 6
# At least this many outputs, and this share of them, appearing or vanishing at once read as a
# moved graph boundary rather than as tensors kept alive.
_BOUNDARY_OUTPUTS = 3
_BOUNDARY_SHARE = 0.25
# Installed packages only: a user's own folder may well be called torch_xla/.
_LIBRARY_MARKERS = ("site-packages", "dist-packages", "<frozen")


def _shape(comp: CanonicalComputation, name: str) -> str:
    return strip_layout(comp.instruction(name).shape).replace(" ", "")


def _fmt_list(items: list[str], limit: int = _MAX_LISTED) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _sources(comps: Iterable[tuple[CanonicalModule, CanonicalComputation, Iterable[str]]]) -> tuple[str, ...]:
    """User source lines from metadata, user code before library code, at most a few."""
    user: list[str] = []
    library: list[str] = []
    for canon, comp, names in comps:
        for name in names:
            ins = comp.computation.by_name.get(name)
            if ins is None:
                continue
            for frame in canon.module.frames_of(ins)[:1]:
                loc = f"{frame.file}:{frame.line}" if frame.line else frame.file
                bucket = library if any(s in frame.file for s in _LIBRARY_MARKERS) else user
                if loc not in bucket:
                    bucket.append(loc)
    return tuple((user or library)[:_MAX_LISTED])


def _attributes(ins: Instruction) -> dict[str, str]:
    return {
        k: normalize_attribute(k, v)
        for k, v in ins.attributes
        if k not in IGNORED_ATTRIBUTES and k not in COMPUTATION_ATTRIBUTES
    }


def _order_changed(pairs: list[tuple[int, int]]) -> bool:
    """True when matched positions do not keep their relative order (an insertion does)."""
    rights = [r for _, r in sorted(pairs)]
    return any(b < a for a, b in pairwise(rights))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _numbers_equal(a: str, b: str) -> bool:
    return _is_number(a) and _is_number(b) and float(a) == float(b)


class _Classifier:
    """Works through one pair of matched computations; state is local to one call."""

    def __init__(
        self,
        lcanon: CanonicalModule,
        rcanon: CanonicalModule,
        left: CanonicalComputation,
        right: CanonicalComputation,
        m: Matching,
        is_entry: bool,
    ) -> None:
        self.lm, self.rm = lcanon, rcanon
        self.left, self.right, self.m = left, right, m
        self.is_entry = is_entry
        self.explained_left: set[str] = set()
        self.explained_right: set[str] = set()
        self.causes: list[Cause] = []
        self.regrouped = False
        self._users_cache: dict[str, dict[str, list[str]]] = {}

    def cause(
        self, kind: CauseKind, summary: str, left: Iterable[str] = (), right: Iterable[str] = (), **kw
    ) -> None:  # type: ignore[no-untyped-def]
        left, right = tuple(left), tuple(right)
        self.explained_left.update(left)
        self.explained_right.update(right)
        sources = _sources([(self.rm, self.right, right), (self.lm, self.left, left)])
        if not sources:
            # Constants and plumbing often carry no metadata; the op that consumes them does.
            sources = _sources(
                [
                    (self.rm, self.right, [u for n in right for u in self._users(self.right).get(n, ())]),
                    (self.lm, self.left, [u for n in left for u in self._users(self.left).get(n, ())]),
                ]
            )
        self.causes.append(
            Cause(kind, summary, HINTS[kind], left, right, sources=sources, computation=self.left.name, **kw)
        )

    def _users(self, comp: CanonicalComputation) -> dict[str, list[str]]:
        cache = self._users_cache
        if comp.name not in cache:
            cache[comp.name] = users_of(comp)
        return cache[comp.name]

    # -- interface: parameters and outputs ------------------------------------------------
    def parameters(self) -> set[tuple[str, str]]:
        """Permutation and shape causes; returns the dimension changes shapes imply."""
        left, right, m = self.left, self.right, self.m
        moved: list[Moved] = []
        shape_changes: list[Change] = []
        for a, na in sorted(left.param_number.items(), key=lambda kv: kv[1]):
            b = m.left.get(a)
            if b is None or b not in right.param_number:
                continue
            nb = right.param_number[b]
            moved.append(Moved(na, nb, _shape(right, b), a, b))
            if _shape(left, a) != _shape(right, b):
                shape_changes.append(Change(a, b, "shape", _shape(left, a), _shape(right, b)))
        dims: set[tuple[str, str]] = set()
        if shape_changes:
            for c in shape_changes:
                dims |= _dim_changes(c.old, c.new)
            listed = [f"input {left.param_number[c.left]} {c.old} -> {c.new}" for c in shape_changes]
            self.cause(
                CauseKind.PARAMETER_SHAPE,
                f"{len(shape_changes)} graph input{'s' if len(shape_changes) > 1 else ''} changed shape: "
                f"{_fmt_list(listed)}; a ragged last batch or a varying sequence length is typical",
                [c.left for c in shape_changes],
                [c.right for c in shape_changes],
                changes=tuple(shape_changes),
            )
        if _order_changed([(mv.left, mv.right) for mv in moved]):
            permuted = tuple(mv for mv in moved if mv.left != mv.right)
            self.cause(
                CauseKind.PARAMETER_PERMUTATION,
                f"the same inputs arrive in another order ({len(permuted)} of {len(moved)} moved, e.g. "
                + _fmt_list([f"A's {mv.left} is B's {mv.right}" for mv in permuted], 3)
                + "): tensors were created or updated in another order",
                [mv.left_name for mv in permuted],
                [mv.right_name for mv in permuted],
                mapping=tuple(moved),
            )
        return dims

    def outputs(self) -> None:
        left, right, m = self.left, self.right, self.m
        right_positions: dict[str, list[int]] = {}
        for j, b in enumerate(right.outputs):
            right_positions.setdefault(b, []).append(j)
        pairs: list[tuple[int, int]] = []
        moved: list[Moved] = []
        used: set[int] = set()
        removed: list[int] = []
        for i, a in enumerate(left.outputs):
            b = m.left.get(a)
            js = [j for j in right_positions.get(b, []) if j not in used] if b else []
            if not js:
                removed.append(i)
                continue
            used.add(js[0])
            pairs.append((i, js[0]))
            moved.append(Moved(i, js[0], _shape(right, b), a, b))  # type: ignore[arg-type]
        added = [j for j in range(len(right.outputs)) if j not in used]
        added, removed = _pair_slots(left, right, added, removed)
        if self._boundary_moved(added, removed):
            return
        if added:
            heads = [right.outputs[j] for j in added]
            cone = [h for h in heads if h in m.right] + self._cone(right, heads, m.right)
            shapes = [_shape(right, right.outputs[j]) for j in added]
            self.cause(
                CauseKind.OUTPUT_ADDED,
                f"B returns {len(added)} more tensor{'s' if len(added) > 1 else ''} than A "
                f"({_fmt_list([f'output {j}: {s}' for j, s in zip(added, shapes, strict=True)])}): a tensor "
                "kept alive, or pulled into the step, only on some steps",
                (),
                cone,
            )
        if removed:
            heads = [left.outputs[i] for i in removed]
            cone = [h for h in heads if h in m.left] + self._cone(left, heads, m.left)
            shapes = [_shape(left, left.outputs[i]) for i in removed]
            self.cause(
                CauseKind.OUTPUT_REMOVED,
                f"B returns {len(removed)} tensor{'s' if len(removed) > 1 else ''} fewer than A "
                f"({_fmt_list([f'output {i}: {s}' for i, s in zip(removed, shapes, strict=True)])}): "
                "a tensor kept alive, or pulled into the step, only on some steps",
                cone,
                (),
            )
        if _order_changed(pairs):
            permuted = tuple(mv for mv in moved if mv.left != mv.right)
            self.cause(
                CauseKind.OUTPUT_PERMUTATION,
                f"the same outputs come out in another order ({len(permuted)} of {len(moved)} moved, e.g. "
                + _fmt_list([f"A's output {mv.left} is B's {mv.right}" for mv in permuted], 3)
                + "): the live tensors were created in another order",
                [mv.left_name for mv in permuted],
                [mv.right_name for mv in permuted],
                mapping=tuple(moved),
            )

    def _boundary_moved(self, added: list[int], removed: list[int]) -> bool:
        """Many outputs appear or vanish at once: one graph is a part of the other, which is what
        an implicit sync (`.item()`, `.cpu()`, `print`) in the middle of a step does."""
        left, right, m = self.left, self.right, self.m
        if added and removed:
            return False
        gone, total, side = (
            (removed, len(left.outputs), "fewer") if removed else (added, len(right.outputs), "more")
        )
        if len(gone) < _BOUNDARY_OUTPUTS or len(gone) < _BOUNDARY_SHARE * max(total, 1):
            return False
        if removed:
            heads = [left.outputs[i] for i in removed]
            names_a, names_b = self._cone(left, heads, m.left) + heads, []
        else:
            heads = [right.outputs[j] for j in added]
            names_a, names_b = [], self._cone(right, heads, m.right) + heads
        self.cause(
            CauseKind.STRUCTURE,
            f"the graph boundary moved: B returns {len(gone)} tensors {side} than A, and what is left "
            "is computed the same way; an implicit sync (.item(), .cpu(), print) or data-dependent "
            "control flow cut the step there (or many tensors are kept alive only on some steps)",
            names_a,
            names_b,
        )
        return True

    @staticmethod
    def _cone(comp: CanonicalComputation, starts: list[str], matched: dict[str, str]) -> list[str]:
        """Unmatched instructions that only exist to compute `starts`."""
        seen: list[str] = []
        stack = [s for s in starts if s not in matched]
        visited = set(stack)
        while stack:
            name = stack.pop()
            seen.append(name)
            for o in comp.operands.get(name, ()):
                if o not in matched and o not in visited:
                    visited.add(o)
                    stack.append(o)
        return seen

    # -- collectives --------------------------------------------------------------------
    def collective(self) -> bool:
        if not self.is_entry:
            return False
        lc, rc = collectives(self.lm), collectives(self.rm)
        if sorted(c.signature for c in lc) == sorted(c.signature for c in rc):
            return False
        lsig = {c.signature for c in rc}
        rsig = {c.signature for c in lc}
        left_changed = [c.name for c in lc if c.signature not in lsig]
        right_changed = [c.name for c in rc if c.signature not in rsig]
        self.cause(CauseKind.COLLECTIVE, summarize(lc, rc), left_changed, right_changed)
        self.regrouped = True
        return True

    # -- matched instructions -------------------------------------------------------------
    def matched_changes(self, dims: set[tuple[str, str]]) -> list[tuple[str, str]]:
        """Constant and attribute causes; returns pairs whose operands were rewired or whose
        opcode changed (structural, handled with the unmatched instructions)."""
        left, right, m = self.left, self.right, self.m
        structural: list[tuple[str, str]] = []
        shape_changed: set[str] = set()
        propagated_left: list[str] = []
        propagated_right: list[str] = []
        lkeys, rkeys = left.keys, right.keys
        lh1, rh1 = left.h1, right.h1
        lins, rins = left.computation.by_name, right.computation.by_name
        lops, rops = left.operands, right.operands
        for a in left.order:
            b = m.left.get(a)
            if b is None or lh1[a] == rh1[b]:
                continue
            ia, ib = lins[a], rins[b]
            if lkeys[a] == rkeys[b]:
                # Same content, so only operands can differ.
                if not self._operands_agree(lops[a], rops[b], ia.opcode in COMMUTATIVE):
                    structural.append((a, b))
                continue
            if a in left.param_number:
                if _shape(left, a) != _shape(right, b):
                    shape_changed.add(a)
                    continue
                self._attribute_change(a, b, ia, ib, set(), (), [], [])
                continue
            if ia.opcode != ib.opcode:
                structural.append((a, b))
                continue
            if self.regrouped and is_collective(ia.opcode):
                self._absorb_into_collective([a], [b])
                continue
            oa, ob = left.operands[a], right.operands[b]
            if not self._operands_agree(oa, ob, ia.opcode in COMMUTATIVE):
                structural.append((a, b))
                continue
            upstream = any(o in shape_changed for o in oa)
            if _shape(left, a) != _shape(right, b):
                shape_changed.add(a)
                upstream = upstream or _explained_by_dims(_shape(left, a), _shape(right, b), dims)
            if ia.opcode == "constant":
                old, new = ia.payload, ib.payload
                if old.replace(" ", "") == new.replace(" ", "") and _shape(left, a) == _shape(right, b):
                    continue
                if (old, new) in dims or (_numbers_equal(old, new)):
                    propagated_left.append(a)
                    propagated_right.append(b)
                    continue
                if _reciprocal_dims(old, new, dims):
                    propagated_left.append(a)
                    propagated_right.append(b)
                    continue
                what = "value" if _shape(left, a) == _shape(right, b) else "shape and value"
                change = Change(a, b, what, f"{_shape(left, a)} {old}", f"{_shape(right, b)} {new}")
                self.cause(
                    CauseKind.CONSTANT_VALUE,
                    f"constant {a} changed {old} -> {new}"
                    + ("" if what == "value" else f" ({_shape(left, a)} -> {_shape(right, b)})")
                    + ": a Python scalar baked into the graph",
                    [a],
                    [b],
                    changes=(change,),
                )
                continue
            self._attribute_change(a, b, ia, ib, dims, upstream, propagated_left, propagated_right)
        if propagated_left:
            for c in self.causes:
                if c.kind is CauseKind.PARAMETER_SHAPE:
                    self.explained_left.update(propagated_left)
                    self.explained_right.update(propagated_right)
                    break
        return structural

    def _operands_agree(self, oa: tuple[str, ...], ob: tuple[str, ...], commutative: bool) -> bool:
        """Operands correspond: paired with each other, or with a twin that computes the same
        subgraph on its own side (lowering shares a node in one graph and repeats it in the other)."""
        if len(oa) != len(ob):
            return False
        m, lh1, rh1 = self.m, self.left.h1, self.right.h1

        def same(x: str, y: str) -> bool:
            mx, my = m.left.get(x), m.right.get(y)
            return mx == y or (mx is not None and rh1[mx] == rh1[y]) or (my is not None and lh1[my] == lh1[x])

        if not commutative:
            return all(same(x, y) for x, y in zip(oa, ob, strict=True))
        rest = list(ob)
        for x in oa:
            y = next((y for y in rest if same(x, y)), None)
            if y is None:
                return False
            rest.remove(y)
        return True

    def _attribute_change(
        self,
        a: str,
        b: str,
        ia: Instruction,
        ib: Instruction,
        dims: set[tuple[str, str]],
        upstream: bool,
        propagated_left: list[str],
        propagated_right: list[str],
    ) -> None:
        """An attribute (or an op's own shape) changed, unless it follows an input's shape."""
        left, right = self.left, self.right
        attrs_a, attrs_b = _attributes(ia), _attributes(ib)
        diff_keys = sorted(k for k in attrs_a.keys() | attrs_b.keys() if attrs_a.get(k) != attrs_b.get(k))
        follows = bool(diff_keys) and all(
            _explained_by_dims(attrs_a.get(k, ""), attrs_b.get(k, ""), dims) for k in diff_keys
        )
        if upstream or follows:
            propagated_left.append(a)
            propagated_right.append(b)
            return
        if not diff_keys and _shape(left, a) == _shape(right, b):
            return  # differs only inside a called computation: classified there
        changes = tuple(Change(a, b, k, attrs_a.get(k, ""), attrs_b.get(k, "")) for k in diff_keys)
        if not diff_keys:
            changes = (Change(a, b, "shape", _shape(left, a), _shape(right, b)),)
        desc = "; ".join(f"{c.what}={c.old or '(none)'} -> {c.new or '(none)'}" for c in changes)
        what = (
            "a sharding annotation changed"
            if diff_keys == ["sharding"]
            else "a Python value reached an op parameter"
        )
        self.cause(CauseKind.ATTRIBUTE, f"{ia.opcode} {a}: {desc}: {what}", [a], [b], changes=changes)

    # -- what is left ----------------------------------------------------------------------
    def structure(self, structural: list[tuple[str, str]], absorb_collectives: bool) -> None:
        left, right, m = self.left, self.right, self.m
        # A subgraph computed twice on one side and once (shared) on the other is the same
        # computation: lowering does not always reuse a node (same graph hash, other CSE).
        left_h1, right_h1 = set(left.h1.values()), set(right.h1.values())
        g = nx.Graph()
        for a in left.order:
            if a not in m.left and a not in self.explained_left and left.h1[a] not in right_h1:
                g.add_node(("A", a))
        for b in right.order:
            if b not in m.right and b not in self.explained_right and right.h1[b] not in left_h1:
                g.add_node(("B", b))
        for a, b in structural:
            g.add_edge(("A", a), ("B", b))
        if not g:
            return
        for side, comp, matched in (("A", left, m.left), ("B", right, m.right)):
            for name in comp.order:
                if (side, name) not in g:
                    continue
                for o in comp.operands[name]:
                    if (side, o) in g:
                        g.add_edge((side, name), (side, o))
                    elif o in matched and comp.instruction(o).opcode not in ("parameter", "constant"):
                        anchor = o if side == "A" else m.right[o]
                        g.add_edge((side, name), ("M", anchor))
        for anchor_users in _users_by_anchor(left, right, m, g):
            for a, b in anchor_users:
                g.add_edge(a, b)
        regions = []
        lpos = {n: k for k, n in enumerate(left.order)}
        rpos = {n: k for k, n in enumerate(right.order)}
        for component in nx.connected_components(g):
            lefts = sorted((n for s, n in component if s == "A"), key=lpos.__getitem__)
            rights = sorted((n for s, n in component if s == "B"), key=rpos.__getitem__)
            if lefts or rights:
                regions.append((lefts, rights))
        for lefts, rights in regions:
            ops = [left.instruction(n).opcode for n in lefts] + [right.instruction(n).opcode for n in rights]
            if absorb_collectives and any(is_collective(op) for op in ops):
                self._absorb_into_collective(lefts, rights)
                continue
            opcodes = _fmt_list(sorted(set(ops)), 5)
            in_region = set(lefts)
            changed = [(a, b) for a, b in structural if a in in_region]
            desc = []
            if changed:
                desc.append(f"{len(changed)} changed")
            only_a = [n for n in lefts if n not in m.left]
            only_b = [n for n in rights if n not in m.right]
            if only_a:
                desc.append(f"{len(only_a)} only in A")
            if only_b:
                desc.append(f"{len(only_b)} only in B")
            self.cause(
                CauseKind.STRUCTURE,
                f"the computation differs in {', '.join(desc)} instruction(s) ({opcodes})",
                lefts,
                rights,
                changes=tuple(
                    Change(a, b, "opcode", left.instruction(a).opcode, right.instruction(b).opcode)
                    for a, b in changed
                    if left.instruction(a).opcode != right.instruction(b).opcode
                ),
            )

    def _absorb_into_collective(self, lefts: list[str], rights: list[str]) -> None:
        """Bucketing plumbing around regrouped collectives belongs to the collective cause."""
        for k, c in enumerate(self.causes):
            if c.kind is CauseKind.COLLECTIVE:
                self.causes[k] = replace(
                    c,
                    left=c.left + tuple(n for n in lefts if n not in c.left),
                    right=c.right + tuple(n for n in rights if n not in c.right),
                )
        self.explained_left.update(lefts)
        self.explained_right.update(rights)

    def run(self, dims: set[tuple[str, str]], regrouped: bool) -> list[Cause]:
        self.regrouped = regrouped
        if self.is_entry:
            dims = dims | self.parameters()
        self.dims = dims
        if self.is_entry:
            self.outputs()
        regrouped = self.collective()
        structural = self.matched_changes(dims)
        self.structure(structural, regrouped)
        return self.causes


def _users_by_anchor(left, right, m, g) -> list[list[tuple[tuple[str, str], tuple[str, str]]]]:  # type: ignore[no-untyped-def]
    """Changed regions of both sides that flow into the same matched instruction are one region."""
    edges: list[list[tuple[tuple[str, str], tuple[str, str]]]] = []
    for side, comp, matched in (("A", left, m.left), ("B", right, m.right)):
        batch = []
        for name in comp.order:
            if name not in matched:
                continue
            for o in comp.operands[name]:
                if (side, o) in g:
                    anchor = name if side == "A" else m.right[name]
                    batch.append(((side, o), ("M", anchor)))
        edges.append(batch)
    return edges


def _pair_slots(
    left: CanonicalComputation, right: CanonicalComputation, added: list[int], removed: list[int]
) -> tuple[list[int], list[int]]:
    """Output slots left over on both sides, of equal shape and in order, are one output computed
    another way (a momentum buffer is `grad` on the first step, `buf * m + grad` after), not one
    tensor added and another removed; what differs inside is classified as structure."""
    still_added = list(added)
    still_removed: list[int] = []
    start = 0
    for i in removed:
        shape = _shape(left, left.outputs[i])
        k = next(
            (
                k
                for k in range(start, len(still_added))
                if _shape(right, right.outputs[still_added[k]]) == shape
            ),
            None,
        )
        if k is None:
            still_removed.append(i)
        else:
            del still_added[k]
            start = k
    return still_added, still_removed


def _dim_changes(old: str, new: str) -> set[tuple[str, str]]:
    """`f32[4,8]` -> `f32[2,8]` gives {("4", "2")}: constants equal to a changed dimension follow it."""
    a = re.findall(r"\d+", old.split("[", 1)[-1])
    b = re.findall(r"\d+", new.split("[", 1)[-1])
    return {(x, y) for x, y in zip(a, b, strict=False) if x != y}


_INT = re.compile(r"\d+")


def _explained_by_dims(old: str, new: str, dims: set[tuple[str, str]]) -> bool:
    """Every number that differs between `old` and `new` follows a changed input dimension:
    equal to it (4 -> 3) or in proportion to it (32 -> 24 when 4 -> 3)."""
    if not dims:
        return False
    a, b = _INT.findall(old), _INT.findall(new)
    if len(a) != len(b):
        return False
    ratios = [(int(x), int(y)) for x, y in dims]
    changed = [(int(x), int(y)) for x, y in zip(a, b, strict=True) if x != y]
    return bool(changed) and all(any(x * q == y * p for p, q in ratios) for x, y in changed)


def _reciprocal_dims(old: str, new: str, dims: set[tuple[str, str]]) -> bool:
    if not (_is_number(old) and _is_number(new)) or not dims:
        return False
    o, n = float(old), float(new)
    for x, y in dims:
        fx, fy = float(x), float(y)
        if fx and fy and abs(o * fx - n * fy) < 1e-6 * max(abs(o * fx), 1.0):
            return True
    return False


def classify_computation(
    lcanon: CanonicalModule,
    rcanon: CanonicalModule,
    left: CanonicalComputation,
    right: CanonicalComputation,
    matching: Matching,
    is_entry: bool,
    dims: set[tuple[str, str]] | None = None,
    regrouped: bool = False,
) -> list[Cause]:
    """Causes for one pair of matched computations.

    `dims` are the (old, new) input dimensions that changed, found in the entry: shapes in
    called computations that follow them are not causes of their own. `regrouped` says the
    module's collectives were found regrouped (by the entry's run), so collective instructions
    in called computations belong to that cause.
    """
    return _Classifier(lcanon, rcanon, left, right, matching, is_entry).run(dims or set(), regrouped)


def input_dim_changes(causes: Iterable[Cause]) -> set[tuple[str, str]]:
    """The (old, new) dimensions of every input whose shape changed."""
    dims: set[tuple[str, str]] = set()
    for c in causes:
        if c.kind is CauseKind.PARAMETER_SHAPE:
            for change in c.changes:
                dims |= _dim_changes(change.old, change.new)
    return dims


def classify_module_level(
    lcanon: CanonicalModule, rcanon: CanonicalModule, explained: bool = False
) -> list[Cause]:
    """Causes that belong to the modules, not to a computation pair: dead code.

    Dead code is a cause only when it differs between the two sides: PyTorch/XLA hashes the IR
    of every node it lowers, used or not, so two graphs computing the same results but with
    different unused nodes (`std_mean` for its mean alone, say) still compile twice. The same
    dead code on both sides is only noted, and so is dead code that changed along with a
    difference already `explained` by another cause.
    """
    ldead = [(c, d) for c in lcanon.computations.values() for d in c.dead]
    rdead = [(c, d) for c in rcanon.computations.values() for d in c.dead]
    if not ldead and not rdead:
        return []
    differs = _dead_signature(ldead) != _dead_signature(rdead) and not explained
    opcodes = sorted({c.instruction(d).opcode for c, d in ldead + rdead})
    if differs:
        summary = (
            f"the graphs compute the same results but their dead code differs ({len(ldead)} unused "
            f"instruction(s) in A, {len(rdead)} in B: {_fmt_list(opcodes, 4)}); PyTorch/XLA hashes "
            "unused nodes too, so this recompiles: an op computed for an output nobody uses"
        )
        hint = (
            "compute only what you use (e.g. torch.mean instead of torch.std_mean(...)[1]), or "
            "compute the unused part the same way on every step"
        )
    else:
        summary = (
            f"{len(ldead)} instruction(s) in A and {len(rdead)} in B never reach a result "
            f"({_fmt_list(opcodes, 4)}): ignored, they do not change what the graph computes"
        )
        hint = HINTS[CauseKind.DEAD_CODE]
    names = [(lcanon, c, [d]) for c, d in ldead] + [(rcanon, c, [d]) for c, d in rdead]
    return [
        Cause(
            CauseKind.DEAD_CODE,
            summary,
            hint,
            tuple(d for _, d in ldead),
            tuple(d for _, d in rdead),
            sources=_sources(names) if differs else (),
            info=not differs,
        )
    ]


def _dead_signature(dead: list[tuple[CanonicalComputation, str]]) -> list[str]:
    """Opcodes, not shapes: dead code whose shapes only follow a changed input is the same code."""
    return sorted(c.instruction(d).opcode for c, d in dead)
