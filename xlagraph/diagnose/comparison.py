"""The state of one comparison of two matched computations, and the helpers every step uses.

The steps themselves (inputs and outputs, collectives, matched instructions, regions) live in
their own modules and receive a `Comparison`; `raw_causes.py` runs them in order. Keeping the type
here, below all of them, is what lets every import point one way.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import replace

from xlagraph._core import PairMap as _PairMap
from xlagraph._core import edited_pairs as _edited_pairs
from xlagraph.canonical import CanonicalComputation, CanonicalModule
from xlagraph.diagnose.causes import HINTS, Cause, CauseKind, Change
from xlagraph.diagnose.sources import sources_of
from xlagraph.match import Matching
from xlagraph.match.users import users_of

__all__ = ["Comparison"]

_MAX_PAST = 64  # instructions looked at past a cause's own, per side
# Where torch records the Python operators of a tensor (`1 - p`, `x ** gamma`, `2 / x`): its own
# methods wrap them, so the dump cites the wrapper, never the user's expression.
_OPERATORS = ("torch/_tensor.py:",)


def _editable(pairs: Mapping[str, str]) -> MutableMapping[str, str]:
    """A copy of a matching's pairs to re-pair: the core's own where the matching is the
    core's (rust/src/diagnose/pair_edits.rs; a dictionary of 600K pairs cost 0.1 s to copy and to read
    back into the core's walks), else a dictionary."""
    if isinstance(pairs, _PairMap):
        return _edited_pairs(pairs)
    return dict(pairs)


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
        # Regions of identity converts only (`noop_converts`): a cause only where nothing else differs.
        self.noops: list[tuple[Cause, str]] = []  # with the note said in their place
        self.pair_left: MutableMapping[str, str] = _editable(m.left)
        self.pair_right: MutableMapping[str, str] = _editable(m.right)
        # The paired instructions the walk found changed, per side (`instructions.matched_changes`).
        self.changed: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())

    def cause_of(self, kind: CauseKind, summary: str, changes: Iterable[Change], **kw) -> None:  # type: ignore[no-untyped-def]
        """A cause of `changes`, naming their instructions on each side."""
        listed = tuple(changes)
        left, right = [c.left for c in listed], [c.right for c in listed]
        self.cause(kind, summary, left, right, changes=listed, **kw)

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
        named = [(self.rm, self.right, right), (self.lm, self.left, left)]
        near = [(self.rm, self.right, [u for n in right for u in self.users(self.right).get(n, ())])]
        near += [(self.lm, self.left, [u for n in left for u in self.users(self.left).get(n, ())])]
        user, library = sources_of(named, near)
        if not user and any(lib.startswith(_OPERATORS) for lib in library):
            far = [(c, comp, self.past(c, comp, names)) for c, comp, names in named]
            user = sources_of(named, far)[0]
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

    def past(self, canon: CanonicalModule, comp: CanonicalComputation, names: tuple[str, ...]) -> list[str]:
        """The users of `names` and on, through the users recorded at the same frames as what they
        use, to the first recorded elsewhere: a Python operator's work (`(1 - p) **
        gamma`: its constant, broadcast and power) is recorded at torch's operator wrapper
        (`torch/_tensor.py`), and the first instruction past it, at the user's line, says where
        the expression is."""
        users = self.users(comp)
        frames = canon.module.frames_of
        by_name = comp.computation.by_name
        out: list[str] = []
        seen = set(names)
        queue = deque((u, n) for n in names for u in users.get(n, ()))
        while queue and len(out) < _MAX_PAST:
            name, used = queue.popleft()
            if name in seen:
                continue
            seen.add(name)
            out.append(name)
            ins, origin = by_name.get(name), by_name.get(used)
            here = frames(ins) if ins is not None else ()
            if here and origin is not None and here == frames(origin):
                queue.extend((u, name) for u in users.get(name, ()))
        return out

    def users(self, comp: CanonicalComputation) -> Mapping[str, list[str]]:
        # (`users_of` keeps one dict per computation object: by name, both sides of a diff whose
        # computations share a name, JAX's `main` or torch_xla's `SyncTensorsGraph.N`, got one
        # side's users.)
        return users_of(comp)

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

    def repair_parameters(self) -> None:
        """Parameters as the evidence pairs them, in the matching every later step reads."""
        sides = (self.left, self.pair_left, self.pair_right), (self.right, self.pair_right, self.pair_left)
        for comp, pairs, twins in sides:
            for param in comp.param_number:
                twin = pairs.pop(param, None)
                if twin is not None:
                    twins.pop(twin, None)
        for a, b in self.param_pairs.items():
            self.pair_left[a] = b
            self.pair_right[b] = a

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
