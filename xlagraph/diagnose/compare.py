"""The raw differences of two matched computations, before any pattern is recognized.

Reading order mirrors how a PyTorch/XLA engineer reasons: first the interface of the graph
(inputs: shapes, element types, layouts, inputs added or removed, a permutation the evidence
shows; outputs: added, removed, permuted), then collectives as one sequence, then changes inside
matched instructions (constants, attributes), and last whatever is left as structural regions.
A change that follows from another (a shape that changes because an input's shape changed, a
constant equal to a batch dimension that changed) is folded into the cause it follows from
instead of being reported again. The recognizers (`xlagraph.diagnose.recognizers`) then name
the patterns behind these raw differences.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from xlagraph.canonical import CanonicalComputation, CanonicalModule
from xlagraph.canonical.hashes import plumbing_attributes
from xlagraph.diagnose.causes import HINTS, Cause, CauseKind, Change
from xlagraph.diagnose.collectives import (
    OTHER_TENSORS_HINT,
    Collective,
    collectives,
    regrouped_only,
    summarize,
)
from xlagraph.diagnose.common import dim_changes, explained_by_dims, fmt_list
from xlagraph.diagnose.instructions import matched_changes
from xlagraph.diagnose.interface import compare_outputs, compare_parameters
from xlagraph.diagnose.regions import structure
from xlagraph.diagnose.sources import sources_of
from xlagraph.match import Matching
from xlagraph.match.bottom_up import users_of

__all__ = ["Comparison", "compare_computation", "input_dim_changes"]


class Comparison:
    """Works through one pair of matched computations; state is local to one call.

    `pair_left` / `pair_right` are the matching with the parameters re-paired from evidence
    (`interface.pair_parameters`): every later step reads them instead of the raw matching.
    """

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
        self.dims: set[tuple[str, str]] = set()
        self.param_pairs: dict[str, str] = {}
        self.pending_dtype: list[Change] = []
        self.pair_left: dict[str, str] = dict(m.left)
        self.pair_right: dict[str, str] = dict(m.right)
        self._users_cache: dict[str, dict[str, list[str]]] = {}

    def cause(
        self,
        kind: CauseKind,
        summary: str,
        left: Iterable[str] = (),
        right: Iterable[str] = (),
        **kw,  # type: ignore[no-untyped-def]
    ) -> None:
        left, right = tuple(left), tuple(right)
        self.explained_left.update(left)
        self.explained_right.update(right)
        near = [
            (self.rm, self.right, [u for n in right for u in self.users(self.right).get(n, ())]),
            (self.lm, self.left, [u for n in left for u in self.users(self.left).get(n, ())]),
        ]
        user, library = sources_of([(self.rm, self.right, right), (self.lm, self.left, left)], near)
        self.causes.append(
            Cause(
                kind,
                summary,
                HINTS[kind],
                left,
                right,
                sources=user or library,
                library=library,
                computation=self.left.name,
                **kw,
            )
        )

    def users(self, comp: CanonicalComputation) -> dict[str, list[str]]:
        cache = self._users_cache
        if comp.name not in cache:
            cache[comp.name] = users_of(comp)
        return cache[comp.name]

    @staticmethod
    def cone(comp: CanonicalComputation, starts: list[str], matched: dict[str, str]) -> list[str]:
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

    def _repair_parameters(self) -> None:
        """Parameters as the evidence pairs them, in the matching every later step reads."""
        lp, rp = self.left.param_number, self.right.param_number
        for a in lp:
            b = self.pair_left.pop(a, None)
            if b is not None:
                self.pair_right.pop(b, None)
        for b in rp:
            a = self.pair_right.pop(b, None)
            if a is not None:
                self.pair_left.pop(a, None)
        for a, b in self.param_pairs.items():
            self.pair_left[a] = b
            self.pair_right[b] = a

    def collective(self) -> bool:
        if not self.is_entry:
            return False
        lc, rc = collectives(self.lm), collectives(self.rm)
        if sorted(c.signature for c in lc) == sorted(c.signature for c in rc):
            return False
        if _follow_inputs(lc, rc, self.dims):
            return False  # a sequence length reaching the collectives' operands: the shape's cause
        lsig = {c.signature for c in rc}
        rsig = {c.signature for c in lc}
        left_changed = [c.name for c in lc if c.signature not in lsig]
        right_changed = [c.name for c in rc if c.signature not in rsig]
        self.cause(CauseKind.COLLECTIVE, summarize(lc, rc), left_changed, right_changed)
        if not regrouped_only(lc, rc):
            # Other tensors reduced, not the same ones bucketed another way: bucketing is no fix.
            self.causes[-1] = replace(self.causes[-1], hint=OTHER_TENSORS_HINT)
        self.regrouped = True
        return True

    def absorb_into(self, kind: CauseKind, lefts: list[str], rights: list[str]) -> bool:
        """Instructions that belong to an existing cause of `kind` (plumbing around regrouped
        collectives, converts around a dtype change); False when there is no such cause."""
        for k, c in enumerate(self.causes):
            if c.kind is kind:
                self.causes[k] = replace(
                    c,
                    left=c.left + tuple(n for n in lefts if n not in c.left),
                    right=c.right + tuple(n for n in rights if n not in c.right),
                )
                self.explained_left.update(lefts)
                self.explained_right.update(rights)
                return True
        return False

    def _dtype(self) -> None:
        changes = self.pending_dtype
        if not changes:
            return
        kinds = sorted({f"{c.old.split('[')[0]} -> {c.new.split('[')[0]}" for c in changes})
        inputs = sum(1 for c in changes if c.left in self.left.param_number)
        examples = fmt_list([f"{c.old} -> {c.new}" for c in changes], 3)
        self.cause(
            CauseKind.DTYPE,
            f"element type changed ({', '.join(kinds)}) on {inputs} input(s) and "
            f"{len(changes) - inputs} output(s), e.g. {examples}",
            [c.left for c in changes],
            [c.right for c in changes],
            changes=tuple(changes),
            count=len(changes),
        )

    def run(self, dims: set[tuple[str, str]], regrouped: bool) -> list[Cause]:
        self.regrouped = regrouped
        if self.is_entry:
            dims = dims | compare_parameters(self)
            self._repair_parameters()
        self.dims = dims
        if self.is_entry:
            compare_outputs(self)
            self._dtype()
        regrouped = self.collective() or self.regrouped
        self.regrouped = regrouped
        structural = matched_changes(self, dims)
        structure(self, structural, regrouped)
        self._forwarded_root()
        if len(self.causes) > 1:
            # Donation follows any other change (other tensors updated in place, other outputs):
            # a cause only when it is the one difference.
            self.causes = [c for c in self.causes if not _donation(c)]
        return self.causes

    def _forwarded_root(self) -> None:
        """A root tuple's own attributes (the outputs' shardings JAX's `out_shardings` print
        there): forwarding leaves it out of every instruction compared above."""
        la, ra = self.left.computation.root, self.right.computation.root
        if la.name in self.left.keys or ra.name in self.right.keys:
            return
        old, new = plumbing_attributes(la), plumbing_attributes(ra)
        if old == new:
            return
        a, b = (dict(p.split("=", 1) for p in t.split(";") if p) for t in (old, new))
        changes = tuple(
            Change(la.name, ra.name, k, a.get(k, ""), b.get(k, ""))
            for k in sorted(a.keys() | b.keys())
            if a.get(k) != b.get(k)
        )
        what = ", ".join(ch.what for ch in changes)
        shown = fmt_list([f"{c.old or '(none)'} -> {c.new or '(none)'}" for c in changes], 2)
        self.cause(
            CauseKind.ATTRIBUTE,
            f"the root tuple's {what} changed ({shown})",
            [la.name],
            [ra.name],
            changes=changes,
        )


def _donation(cause: Cause) -> bool:
    return bool(cause.changes) and all(ch.what == "input_output_alias" for ch in cause.changes)


def _follow_inputs(lc: list[Collective], rc: list[Collective], dims: set[tuple[str, str]]) -> bool:
    """The same collectives over the same explicit replica groups, whose operands differ only as
    the inputs' dimensions did: the same devices reduce tensors of another length. Implicit
    groups (`{}`, every device) could hide another world size, so they never qualify."""
    return (
        bool(dims)
        and len(lc) == len(rc)
        and all(
            a.kind == b.kind
            and a.groups == b.groups
            and a.groups not in ("", "{}")
            and a.dimensions == b.dimensions
            and len(a.operands) == len(b.operands)
            and all(
                x == y or explained_by_dims(x, y, dims) for x, y in zip(a.operands, b.operands, strict=True)
            )
            for a, b in zip(lc, rc, strict=True)
        )
    )


def compare_computation(
    lcanon: CanonicalModule,
    rcanon: CanonicalModule,
    left: CanonicalComputation,
    right: CanonicalComputation,
    matching: Matching,
    is_entry: bool,
    dims: set[tuple[str, str]] | None = None,
    regrouped: bool = False,
) -> list[Cause]:
    """Raw differences for one pair of matched computations.

    `dims` are the (old, new) input dimensions that changed, found in the entry: shapes in
    called computations that follow them are not causes of their own. `regrouped` says the
    module's collectives were found regrouped (by the entry's run), so collective instructions
    in called computations belong to that cause.
    """
    return Comparison(lcanon, rcanon, left, right, matching, is_entry).run(dims or set(), regrouped)


def input_dim_changes(causes: Iterable[Cause]) -> set[tuple[str, str]]:
    """The (old, new) dimensions of every input whose shape changed."""
    dims: set[tuple[str, str]] = set()
    for c in causes:
        if c.kind is CauseKind.PARAMETER_SHAPE:
            for change in c.changes:
                dims |= dim_changes(change.old, change.new)
    return dims
