"""The compiled matcher (rust/src/matching/matcher.rs): each computation is read into the core once, for
as long as it is alive (a report matches a graph against several earlier ones), and the phases of
`xlagraph.match` run there (`tests/oracles/match_reference.py` is their reference). Input it cannot
take is an error that says why, not a second matcher."""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from xlagraph import _core
from xlagraph.canonical import CanonicalComputation
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["Matching", "Users", "match", "side", "sum_chains", "users"]

_match_sides = _core.match_sides
_match_side_of = _core.match_side_of
_users_mapping = _core.side_users_mapping
_sum_chains = _core.side_sum_chains

_SIDES: WeakKeyDictionary[CanonicalComputation, object] = WeakKeyDictionary()
# A copy costs about 90 bytes per instruction: a report that keeps 20 large graphs alive keeps
# only the latest copies, up to this many instructions (each recompile is matched against the
# closest earlier graphs, so the latest are the ones asked for again), and always the latest two:
# the pair just matched, whose users the comparison asks for next (`users.users_of`).
KEEP_INSTRUCTIONS = 1_000_000
_RECENT: deque[tuple[weakref.ref[CanonicalComputation], int]] = deque()


def side(comp: CanonicalComputation) -> object:
    """The core's copy of `comp`, made once while `comp` lives (and while it is among the latest)."""
    found = _SIDES.get(comp)
    if found is None:
        instructions = comp.computation.instructions
        found = _SIDES[comp] = _read(comp)
        _RECENT.append((weakref.ref(comp), len(instructions)))
        kept = sum(n for ref, n in _RECENT if ref() is not None)
        while kept > KEEP_INSTRUCTIONS and len(_RECENT) > 2:
            ref, n = _RECENT.popleft()
            if (old := ref()) is not None:
                kept -= n
                _SIDES.pop(old, None)
    return found


def _read(comp: CanonicalComputation) -> object:
    """The core's copy of `comp`, from its handle (no Python object read per instruction)."""
    return _match_side_of(comp.core, COMMUTATIVE)


def users(comp: CanonicalComputation) -> Mapping[str, list[str]]:
    """`users.users_of(comp)` answered by the core from its copy of `comp`."""
    return Users(_users_mapping(side(comp)))


def sum_chains(comp: CanonicalComputation) -> list[tuple[str, list[str], list[str]]]:
    """The chains of a sum in `comp` with three terms or more (rust/src/matching/sum_terms.rs
    `chains`), in `comp.order`: each chain's root, its terms left to right, and the value each
    term stands for (`peeled`: a term scaled by a scalar constant is its value)."""
    return _sum_chains(side(comp))


class Users(Mapping[str, list[str]]):
    """The users of each instruction (`users.users_of`) over the core's copy
    (rust/src/matching/users.rs): a name's list is made when asked for, not one per instruction up
    front; the keys in the dictionary's order. Never modify a list it gives."""

    __slots__ = ("_core", "get")

    def __init__(self, core: object) -> None:
        self._core = core
        self.get = core.get  # type: ignore[attr-defined]  (every caller's way in: no Python frame)

    def __getitem__(self, name: str) -> list[str]:
        return self._core[name]  # type: ignore[index]

    def __contains__(self, name: object) -> bool:
        return name in self._core  # type: ignore[operator]

    def __len__(self) -> int:
        return len(self._core)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[str]:
        return iter(self._core.keys())  # type: ignore[attr-defined]


@dataclass(frozen=True, eq=False)
class Matching:
    """`left[a] == b` when left instruction `a` corresponds to right instruction `b`;
    `matcher[a]` names the phase that paired them (shown in reports)."""

    left: dict[str, str]
    right: dict[str, str]
    matcher: dict[str, str]


def match(
    left: CanonicalComputation,
    right: CanonicalComputation,
    sent: AbstractSet[str],
    resharded: bool,
    context: list[tuple[int, int]],
) -> Matching:
    """`xlagraph.match.match` with the inputs it computes: the values `sent` to another pipeline
    stage, whether the graphs are `resharded`, the output slots paired by `context`."""
    a, b = side(left), side(right)
    found = _match_sides(
        a, b, [o in sent for o in left.outputs], [o in sent for o in right.outputs], resharded, context
    )
    if found is None:
        # The core stops where a phase would read a hash or operands the canonical form lacks.
        raise ValueError(
            f"computations {left.name} and {right.name}: the canonical form lacks a hash or the "
            "operands of an instruction the matcher reaches"
        )
    return Matching(*found)
