"""`parameter_added` / `parameter_removed` with the work that reads the new input: the
instructions that use an input only one graph takes are part of that input's cause."""

from __future__ import annotations

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._dataflow import downstream, rewired
from xlagraph.diagnose.recognizers._source import user_files
from xlagraph.diagnose.recognizers.random_skip import skip_sites
from xlagraph.match.users import users_of

__all__ = ["RECOGNIZER"]

_LAYER_HINT = fix("parameter_added.layer")


def layer_work(only: str) -> str:
    """What new_input calls work only graph `only` ("A" or "B") does; a later recognizer that
    knows better (an optimizer swap) takes this phrase back out of the summary."""
    return f": work only {only} does (a layer, a stage's share)"


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    out: list[Cause] = []
    consumed: set[int] = set()
    for kind, side in ((CauseKind.PARAMETER_ADDED, "right"), (CauseKind.PARAMETER_REMOVED, "left")):
        params = [i for i, c in enumerate(pending) if c.kind is kind]
        if not params:
            continue
        comp = (evidence.right if side == "right" else evidence.left).entry
        users = users_of(comp)
        readers = {u for i in params for p in getattr(pending[i], side) for u in users.get(p, ())}
        regions = [
            i
            for i, c in enumerate(pending)
            if c.kind is CauseKind.STRUCTURE and i not in consumed and readers & set(getattr(c, side))
        ]
        if not regions:
            continue
        # What only this graph computes from those inputs, further down: more of the same new
        # work (a layer's activation and its updated weights), not causes of their own.
        cone = downstream(users, [p for i in params for p in getattr(pending[i], side)])
        own = set().union(*(getattr(pending[i], side) for i in regions))
        out_kind = CauseKind.OUTPUT_ADDED if side == "right" else CauseKind.OUTPUT_REMOVED
        more = [
            i
            for i, c in enumerate(pending)
            if i not in consumed
            and i not in regions
            and (
                (c.kind is CauseKind.STRUCTURE and set(getattr(c, side)) & cone)
                or (c.kind is out_kind and set(getattr(c, side)) & (cone | own))
            )
        ]
        regions += [i for i in more if pending[i].kind is CauseKind.STRUCTURE]
        # The collectives that work issues (a tensor-parallel layer's all-reduces), when every
        # collective only this graph has is in it: more of the same layer, not a regrouping.
        paired = evidence.entry_match if side == "right" else evidence.entry_match_left
        if any(pending[i].kind is out_kind for i in more):
            work = cone | own.union(*(getattr(pending[i], side) for i in regions))
            more += [
                i
                for i, c in enumerate(pending)
                if c.kind is CauseKind.COLLECTIVE
                and i not in consumed
                and (extra := {n for n in getattr(c, side) if n not in paired})
                and extra <= work
            ]
        # Ops that only read other inputs now: inputs were inserted, so the same op reads the
        # next layer's weight (renumbered), not a change of its own.
        regions += [
            i
            for i, c in enumerate(pending)
            if i not in consumed
            and i not in regions
            and c.kind is CauseKind.STRUCTURE
            and rewired(evidence, c)
        ]
        outputs = [i for i in more if pending[i].kind is out_kind]
        regions += [i for i in more if pending[i].kind is CauseKind.COLLECTIVE]
        first = pending[params[0]]
        n = sum(len(getattr(pending[i], side)) for i in regions if pending[i].kind is CauseKind.STRUCTURE)
        only = "B" if side == "right" else "A"
        summary = f"{first.summary}, read by {n} instruction(s) that exist only in {only}"
        if outputs:
            k = sum(1 for i in outputs for ch in pending[i].changes if ch.what == "output")
            summary += f" and giving {k} output(s) of their own{layer_work(only)}"
        hint = _LAYER_HINT if outputs else ""
        # Within one run, a layer that runs in one graph only, in a script whose `if` follows a
        # number drawn in Python, is a layer skipped at random: comparing partitions is no fix.
        if outputs and any(skip_sites(f) for f in user_files(evidence)):
            hint = fix("conditional_work.random_skip")
        out.append(merge(kind, summary, [pending[i] for i in params + regions + outputs], hint=hint))
        consumed.update(params + regions + outputs)
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


RECOGNIZER = Recognizer("new_input", _recognize)
