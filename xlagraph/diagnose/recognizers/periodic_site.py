"""The user's line of work done every k steps: the `if step % k == 0:` block, not the helper.

HLO metadata keeps only the innermost frame, so an extra output computed in a helper of the
user's (`global_grad_norm(params)`) cites the helper's line. When that helper is called from an
`if ... % k:` block, the call is the line to change; it is cited first, the helper's line after.
So it is, then its `if`, for a helper called under any other `if` (a flag passed to a compiled
step) where the same file calls it unguarded too (`_guarded_calls`): the `if` makes the work
appear on some calls only.
Work with no user line at all (a validation pass inside library code) cites the statements of
the `if ... % k:` blocks in the loop around the step's sync, when there are any.
"""

from __future__ import annotations

import re
from dataclasses import replace

from xlagraph.diagnose.causes import Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._causes import renamed
from xlagraph.diagnose.recognizers._guarded_calls import guarded_calls
from xlagraph.diagnose.recognizers._periodic import (
    enclosing_if,
    inside_periodic_if,
    periodic_caller,
    periodic_in_loop,
    reports_only,
)
from xlagraph.diagnose.recognizers._source import source_text, user_files

__all__ = ["RECOGNIZER"]

_KEPT = (CauseKind.OUTPUT_ADDED, CauseKind.OUTPUT_REMOVED)
_STORES = re.compile(r"\.(append|extend|add|update|put)\(|[^=!<>]=[^=]|\+=|\]\s*=")
_KINDS = (
    CauseKind.OUTPUT_ADDED,
    CauseKind.OUTPUT_REMOVED,
    CauseKind.CONDITIONAL_WORK,
    CauseKind.STRUCTURE,
    CauseKind.SHARDING,
    CauseKind.GRAPH_BREAK,  # a helper that syncs (.tolist() of a histogram), called every k steps
    CauseKind.PARAMETER_ADDED,  # a parameter group added under `if step == k:` (its lr is new data)
)
# A tensor placed on the device (or sharded) in the block: where its sharding comes from.
# A flag set from the step count, or a setting assigned from it (`blk.want_weights = log_now`).
_SETS_FLAG = re.compile(r"[^=!<>]=[^=]")
_PLACES = re.compile(r"\.to\(|mark_sharding\(|\bdevice\b")


def _periodic_work(c: Cause) -> bool:
    """A cause to place at its `if`: one to fix, or gradient accumulation's update, expected but
    still work done every k steps (its `if`, and the inputs it brings, as before it was info)."""
    return not c.info or c.fix_id == "conditional_work.accumulation"


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    out: list[Cause] = []
    consumed: set[int] = set()
    files: list[str] | None = None  # the user's files, read off both graphs once, when first needed
    for i, c in enumerate(pending):
        if c.kind not in _KINDS or not _periodic_work(c):
            continue
        user = [loc for loc in c.sources if is_user_location(loc)]
        if not user:
            blocks = periodic_in_loop(evidence.context.call_site)
            if c.kind is not CauseKind.GRAPH_BREAK:  # a print of a tensor syncs; it makes no work
                blocks = [b for b in blocks if not reports_only(b)]
            if c.kind in _KEPT:  # a tensor kept alive is stored: appended, assigned, accumulated
                blocks = [b for b in blocks if _STORES.search(source_text(b))]
            elif c.kind is CauseKind.SHARDING:  # a batch that comes another way on those steps
                blocks = [b for b in blocks if _PLACES.search(source_text(b))]
            elif c.kind is CauseKind.STRUCTURE:  # library code switched by a flag set every k steps
                blocks = sorted(blocks, key=lambda b: not _SETS_FLAG.search(source_text(b)))[:3]
            blocks = blocks[:3] if c.kind is CauseKind.STRUCTURE else blocks[:2]
            if blocks:
                found = replace(c, sources=tuple(dict.fromkeys([*blocks, *c.sources]))[:6])
                if c.kind is CauseKind.STRUCTURE:
                    # The work an earlier recognizer named at the same block (the merge's own
                    # outputs): this region is more of it, not a second cause at that `if`.
                    named = next(
                        (
                            j
                            for j, o in enumerate(pending)
                            if j not in consumed
                            and o.kind is CauseKind.CONDITIONAL_WORK
                            and _periodic_work(o)
                            and blocks[0] in o.sources
                        ),
                        None,
                    )
                    if named is not None and not any(o.kind is CauseKind.CONDITIONAL_WORK for o in out):
                        out.append(pending[named])
                        consumed.add(named)
                    switched = next(
                        (k for k, o in enumerate(out) if o.kind is CauseKind.CONDITIONAL_WORK), None
                    )
                    if switched is not None:  # another region of the same switch
                        out[switched] = replace(
                            out[switched],
                            left=out[switched].left + c.left,
                            right=out[switched].right + c.right,
                            count=out[switched].count + c.count,
                        )
                        consumed.add(i)
                        continue
                    # `if step % k == 0:` every k steps; `if step == k:` on that step (or from it on)
                    # (or a flag set from `step % k`)
                    periodic = any(
                        inside_periodic_if(b) or "%" in source_text(b).split("#")[0] for b in blocks
                    )
                    when = "every k steps" if periodic else "on the step its `if` picks"
                    found = renamed(
                        found,
                        CauseKind.CONDITIONAL_WORK,
                        f"library code computes another way on some steps: the loop switches it {when} "
                        f"at {', '.join(blocks)} ({c.summary.split(';', 1)[0]})",
                    )
                out.append(found)
                consumed.add(i)
            continue
        if files is None:
            files = user_files(evidence)
        sites = [s for loc in user if (s := periodic_caller(loc, files))]
        if not sites and c.kind in _KEPT and (guarded := guarded_calls(user[0])):
            # Not every k steps but under any `if` (a flag passed to a compiled step), where the
            # helper is called unguarded too: the guarded call, then its `if`.
            out.append(replace(c, sources=tuple(dict.fromkeys([*guarded[:2], *c.sources]))[:6]))
            consumed.add(i)
            continue
        # The call, then the `if ... % k:` that makes it periodic, then the helper's own lines
        # (unless the cause already cites that `if` first, then the call).
        if not sites or sites[0] == c.sources[0]:
            continue
        block = enclosing_if(sites[0])
        if c.sources[:2] == (block, sites[0]):
            continue
        out.append(
            replace(c, sources=tuple(dict.fromkeys([sites[0], *([block] if block else []), *c.sources]))[:6])
        )
        consumed.add(i)
    # New inputs of work done every k steps (a re-initialisation's scalars) belong to that work.
    work = next((k for k, o in enumerate(out) if o.kind is CauseKind.CONDITIONAL_WORK), None)
    if work is None:
        work_i = next(
            (i for i, c in enumerate(pending) if c.kind is CauseKind.CONDITIONAL_WORK and _periodic_work(c)),
            None,
        )
        if work_i is not None and any(o.kind is CauseKind.PARAMETER_ADDED for o in out):
            out.append(pending[work_i])
            consumed.add(work_i)
            work = len(out) - 1
    if work is not None:
        added = [o for o in out if o.kind is CauseKind.PARAMETER_ADDED]
        for o in added:
            w = out[work]
            out[work] = replace(
                w, right=w.right + o.right, changes=w.changes + o.changes, count=w.count + o.count
            )
        out = [o for o in out if o.kind is not CauseKind.PARAMETER_ADDED]
    return Recognized(tuple(out), frozenset(consumed)) if out else NOTHING


RECOGNIZER = Recognizer("periodic_site", _recognize)
