"""A tuple that carries other values: `jax.checkpoint`'s opt-barrier holds what the remat policy
saves (four arrays under one policy, three under another), a `tuple` gathers them for it. Its
shape is its elements' shapes, so a change of it is no size of its own (never a Python int): it
follows from the cause that names the work its elements come from, and is folded into it."""

from __future__ import annotations

from xlagraph.canonical import CanonicalModule
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.recognizers._causes import fold_into

__all__ = ["RECOGNIZER", "carries_only"]

_CARRIERS = frozenset({"tuple", "opt-barrier"})
_LISTED = 3


def carries_only(evidence: Evidence, cause: Cause) -> bool:
    """An `attribute` whose every change is the tuple shape of a tuple or an opt-barrier."""
    found = evidence.instructions(cause)
    return (
        cause.kind is CauseKind.ATTRIBUTE
        and bool(cause.changes and found)
        and all(
            ch.what == "shape" and ch.old.startswith("(") and ch.new.startswith("(") for ch in cause.changes
        )
        and all(ins.opcode in _CARRIERS for _, ins in found)
    )


def _elements(canon: CanonicalModule, names: tuple[str, ...], computation: str) -> set[str]:
    """What the carriers `names` hold: their operands, past nested carriers."""
    comp = canon.computations.get(computation, canon.entry)
    by_name = comp.computation.by_name
    found: set[str] = set()
    todo, seen = list(names), set(names)
    while todo:
        for o in comp.operands.get(todo.pop(), ()):
            ins = by_name.get(o)
            if ins is not None and ins.opcode in _CARRIERS:
                if o not in seen:
                    seen.add(o)
                    todo.append(o)
            else:
                found.add(o)
    return found


def _recognize(evidence: Evidence, everything: tuple[Cause, ...]) -> Recognized:
    carried = [i for i, c in enumerate(everything) if carries_only(evidence, c)]
    if not carried:
        return NOTHING
    homes: dict[int, list[int]] = {}
    for i in carried:
        c = everything[i]
        left = _elements(evidence.left, c.left, c.computation)
        right = _elements(evidence.right, c.right, c.computation)
        home = next(
            (
                j
                for j, d in enumerate(everything)
                if j not in carried and (left & set(d.left) or right & set(d.right))
            ),
            None,
        )
        if home is None:
            return NOTHING  # one the named work does not explain: left as it is
        homes.setdefault(home, []).append(i)
    if len(homes) != 1:
        return NOTHING
    ((home, echoes),) = homes.items()
    names = ", ".join(everything[i].changes[0].left for i in echoes[:_LISTED])
    return fold_into(
        everything, home, echoes, f"the tuples that carry its values ({names}) change shape with it"
    )


RECOGNIZER = Recognizer("tuple_carry", _recognize)
