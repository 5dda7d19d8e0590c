"""`parameter_added` (info) on a warm-up step: scalar inputs that the first graph read from one
shared input. torch_xla uploads equal Python scalars once (its scalar data cache), so two scalars
that happen to be equal on the first step (an EMA decay of 0.1 and Adam's `1 - beta1`) are one
input there; once their values differ each is an input of its own, and the graph changes once.
Nothing was added to the program: the same ops read the same kind of value. (`size_echo` names
the same split where a changed length moved the value.)

Evidence: every new input of the cause is a scalar; each instruction that reads it is paired with
one of the first graph's that reads, at the same operand, one scalar input of the same type, not
removed, whose other readers still read one input in the new graph and not this one (it split, it
did not move); and that input was made by another line of code than the new one: the cache shares
a value across code sites, while a new value made by the same line (a param group's own learning
rate) is new data of that code's. Warm-up steps only: later, a shared value that splits is a
recompile of its own, left to the other recognizers.
"""

from __future__ import annotations

from xlagraph.canonical import CanonicalComputation
from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._causes import WARM_UP_STEPS, added_at_warm_up, merge, with_number_origin
from xlagraph.ir import strip_layout
from xlagraph.match.users import users_of
from xlagraph.opcodes import COMMUTATIVE

__all__ = ["RECOGNIZER", "merged_into", "read_instead", "split_from"]

HINT = fix("parameter_added.shared_scalar")
MERGED_HINT = fix("parameter_removed.shared_scalar")
_RESIZED = frozenset({CauseKind.PARAMETER_SHAPE, CauseKind.DYNAMIC_SHAPE})


def _scalar(comp: CanonicalComputation, name: str) -> str:
    """The element type of a scalar input (`f32[]` -> `f32`), `` for anything else."""
    shape = strip_layout(comp.instruction(name).shape)
    return shape[:-2] if shape.endswith("[]") and name in comp.param_number else ""


def _made_at(module, comp: CanonicalComputation, name: str) -> str:  # type: ignore[no-untyped-def]
    """The line an input's metadata points to (`` where there is none)."""
    frames = module.frames_of(comp.instruction(name))
    return f"{frames[0].file}:{frames[0].line}" if frames else ""


def split_from(evidence: Evidence, param: str, gone: set[str], same_line: bool = False) -> str:
    """The first graph's scalar input that `param`'s readers read there, when the new graph still
    reads that input's counterpart: `` when there is none, or the readers disagree. Made by
    another line than `param` unless `same_line` (a term of a sum whose weights one line makes)."""
    right, left = evidence.right.entry, evidence.left.entry
    to_a = evidence.entry_match
    dtype = _scalar(right, param)
    found = set()
    readers = users_of(right).get(param, ())
    for u in readers:
        v = to_a.get(u)
        if v is None or v not in left.operands:
            return ""
        at = [k for k, o in enumerate(right.operands[u]) if o == param]
        theirs = left.operands[v]
        olds = {theirs[k] for k in at if k < len(theirs)}
        if len(olds) != 1:
            return ""
        (q,) = olds
        if _scalar(left, q) != dtype:
            return ""
        if q in gone:  # removed, not shared: the interface pairs every other input
            return ""
        mine, theirs_at = (
            _made_at(evidence.right.module, right, param),
            _made_at(evidence.left.module, left, q),
        )
        if not same_line and (not mine or not theirs_at or mine == theirs_at):
            return ""
        found.add(q)
    if len(found) != 1:
        return ""
    # The shared input's other readers in A still read one input in B, and not this one.
    (q,) = found
    partners = {to_a.get(u) for u in readers}
    to_b = evidence.entry_match_left
    others = [to_b.get(u) for u in users_of(left).get(q, ()) if u not in partners]
    if not others or any(v is None or param in right.operands.get(v, ()) for v in others):
        return ""
    return q


def read_instead(evidence: Evidence, param: str) -> str:
    """B's scalar input (of `param`'s type) that every reader of A's scalar input `param` is paired
    with a reader of, at the same operand: what B reads where A read `param`. `` when not one."""
    left, right = evidence.left.entry, evidence.right.entry
    dtype = _scalar(left, param)
    to_b = evidence.entry_match_left
    found = set()
    for u in users_of(left).get(param, ()):
        v = to_b.get(u)
        if not dtype or v is None or v not in right.operands:
            return ""
        mine = right.operands[v]
        if left.instruction(u).opcode in COMMUTATIVE:  # the operand that is none of the others'
            theirs = {to_b.get(o) for o in left.operands[u] if o != param}
            found |= {o for o in mine if o not in theirs}
        else:
            found |= {mine[k] for k, o in enumerate(left.operands[u]) if o == param and k < len(mine)}
    if len(found) != 1:
        return ""
    (p,) = found
    return p if _scalar(right, p) == dtype else ""


def merged_into(evidence: Evidence, param: str, added: set[str]) -> tuple[str, str]:
    """(B's input, A's other input) where B reads, in place of A's scalar input `param` (an input B
    does not take), an input (`read_instead`) paired with another input of A of the same type, made
    by another line (or both by one library line, which tells no code sites apart): A's two values
    were equal on B's step and shared one upload. ("", "") when not that."""
    left = evidence.left.entry
    p = read_instead(evidence, param)
    twin = evidence.entry_match.get(p, "")
    if not p or p in added or twin == param or _scalar(left, twin) != _scalar(left, param):
        return "", ""
    lines = (_made_at(evidence.left.module, left, param), _made_at(evidence.left.module, left, twin))
    # One user line made both: one value of that code's. One library line (torch.compile's graphs
    # cite torch/_ops.py for every op's scalar) does not tell the code sites apart.
    if not all(lines) or (lines[0] == lines[1] and is_user_location(lines[0])):
        return "", ""
    return p, twin


def _merged(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    """The removed inputs of A that `merged_into` an input of B, each named with both values' lines."""
    if any(c.kind in _RESIZED for c in pending):
        return NOTHING  # sizes moved: values made from them meet by that change (`size_echo`'s)
    left, right = evidence.left.entry, evidence.right.entry
    added = {p for c in pending if c.kind is CauseKind.PARAMETER_ADDED for p in c.right}
    warm = _state_made(evidence)
    out: list[Cause] = []
    consumed: list[int] = []
    for i, c in enumerate(pending):
        if c.kind is not CauseKind.PARAMETER_REMOVED or not c.left:
            continue
        pairs = [merged_into(evidence, q, added) for q in c.left]
        if not all(p for p, _ in pairs):
            continue
        said = "; ".join(
            f"A's inputs {left.param_number[q]} and {left.param_number[t]} are "
            f"B's input {right.param_number[p]}"
            for q, (p, t) in zip(c.left, pairs, strict=True)
        )
        summary = (
            f"{said}: two Python scalars were equal on this step and torch_xla uploads equal scalars "
            "once, so the graph reads one input for both (a graph of its own each time the values meet)"
        )
        lines = [
            _made_at(evidence.left.module, left, n)
            for q, (_, t) in zip(c.left, pairs, strict=True)
            for n in (q, t)
        ]
        # The readers themselves differ where the matcher paired them: they read another input now.
        readers_a = {u for q in c.left for u in users_of(left).get(q, ())}
        readers_b = {u for p, _ in pairs for u in users_of(right).get(p, ())}
        regions = [
            k
            for k, r in enumerate(pending)
            if r.kind is CauseKind.STRUCTURE
            and r.left
            and set(r.left) <= readers_a
            and set(r.right) <= readers_b
        ]
        sources = tuple(dict.fromkeys([*c.sources, *lines]))[:6]
        merged = [c, *(pending[k] for k in regions)]
        if warm:
            # The step compiles anyway for the state it creates: the values meeting costs it no
            # graph of its own, and their split later is the warm-up split `_recognize` names.
            summary = (
                f"{said}: two Python scalars were equal on this warm-up step and torch_xla uploads "
                "equal scalars once, so the graph reads one input for both; the step compiles anyway "
                "for the state it creates, so the meeting costs no graph of its own: expected once"
            )
            cause = merge(c.kind, summary, merged, HINT, sources=sources, info=True)
        else:
            cause = merge(c.kind, summary, merged, MERGED_HINT, sources=sources)
        out.append(with_number_origin(cause))
        consumed += [i, *regions]
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


def _state_made(evidence: Evidence) -> bool:
    """A warm-up step whose graph takes new inputs that are not scalars (optimizer buffers made on
    the first steps, whichever recognizer names them): it compiles whatever Python scalars do."""
    if evidence.context.step >= WARM_UP_STEPS:
        return False
    right = evidence.right.entry
    return any(p not in evidence.entry_match and not _scalar(right, p) for p in right.param_number)


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    if not evidence.entry_match:
        return NOTHING
    merged = _merged(evidence, pending)  # removals only: no index the split below takes
    right, left = evidence.right.entry, evidence.left.entry
    gone = {p for c in pending if c.kind is CauseKind.PARAMETER_REMOVED for p in c.left}
    causes: list[Cause] = list(merged.causes)
    consumed: list[int] = list(merged.consumed)
    for i in added_at_warm_up(evidence, pending):
        cause = pending[i]
        params = [p for p in cause.right if p in right.param_number]
        if not params or not all(_scalar(right, p) for p in params):
            continue
        shared = [split_from(evidence, p, gone) for p in params]
        if not all(shared):
            continue
        # The readers themselves are the regions that changed: they read another input now.
        readers_b = {u for p in params for u in users_of(right).get(p, ())}
        readers_a = {u for q in shared for u in users_of(left).get(q, ())}
        regions = [
            k
            for k, c in enumerate(pending)
            if c.kind is CauseKind.STRUCTURE
            and k not in merged.consumed
            and c.right
            and set(c.right) <= readers_b
            and set(c.left) <= readers_a
        ]
        n = len(params)
        summary = (
            f"B takes {n} scalar input(s) more that A read from an input shared with another scalar "
            "of equal value (torch_xla makes one input of equal Python scalars): their values differ "
            "from this step on; expected once"
        )
        causes.append(
            merge(
                CauseKind.PARAMETER_ADDED, summary, [cause] + [pending[k] for k in regions], HINT, info=True
            )
        )
        consumed += [i, *regions]
    if not causes:
        return NOTHING
    return Recognized(tuple(causes), frozenset(consumed))


RECOGNIZER = Recognizer("shared_scalar", _recognize)
