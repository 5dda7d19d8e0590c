"""`conditional_work`: one branch of a host `if` replaced by another. `if LABEL_SMOOTHING:` in a
traced step (torch_xla.compile, or the lazy tensor loop: no dynamo guard records the flag) picks
which code the step traces; when the value flips, the work of one branch leaves the graph and the
other's comes in, and the raw differences are its symptoms: inputs only one branch reads (the
labels `cross_entropy` takes, the constants of a smoothed target), and the regions of each side.

Evidence: the instructions only A has come (through their user frames, innermost first) from one
branch of an `if` statement, and those only B has from another branch of the same statement
(`if`/`elif`/`else`), read from the syntax tree of the stored source. The cause cites the `if`,
names the value it tests and the lines that set that value while the run goes on (not its
initial module-level assignment).
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import replace
from functools import lru_cache

from xlagraph.diagnose.causes import INTERFACE, Cause, CauseKind
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.frames import location, sources_key, split_location, user_frames
from xlagraph.diagnose.recognizers._beside_work import branch_residue
from xlagraph.diagnose.recognizers._causes import merge
from xlagraph.diagnose.recognizers._source import user_files
from xlagraph.diagnose.recognizers._statements import calls_of, enclosing, enclosing_function, syntax_tree
from xlagraph.ir import Frame

__all__ = ["RECOGNIZER"]

_KINDS = (CauseKind.STRUCTURE, *INTERFACE)
_HINT = fix("conditional_work.host_branch")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# Of the instructions one side has alone, the share that must come from the `if`'s branches: a
# few stray ops (a constant the other branch shares) do not decide, most of the work does.
_SHARE = 0.5

Branch = tuple[str, int, int]  # (file, line of the `if`, which branch: 0 the body, k the k-th elif/else)


def _branch(loc: str) -> Branch | None:
    """The innermost `if` statement (an `if`/`elif`/`else` chain as one) whose branch holds the
    statement at `loc`, within the function it is in; None outside any or in the condition."""
    return _branch_in(loc, sources_key())


@lru_cache(maxsize=4096)  # (per source text: the same line of another capture's file, or unread)
def _branch_in(loc: str, _sources: tuple[object, ...]) -> Branch | None:
    file, n = split_location(loc)
    if not file or not n:
        return None
    chain = enclosing(file, n)
    for depth in range(len(chain) - 1, -1, -1):
        stmt = chain[depth][0]
        if isinstance(stmt, _SCOPES):
            return None
        if not isinstance(stmt, ast.If) or depth + 1 >= len(chain):
            continue
        inner = chain[depth + 1][1]  # the block the next statement sits in
        k = 0 if inner is stmt.body else 1
        # `elif`: an `if` alone in its parent's `else` is one more branch of the parent's chain.
        while depth and isinstance(up := chain[depth - 1][0], ast.If) and up.orelse == [stmt]:
            k, stmt, depth = k + 1, up, depth - 1
        if "__name__" in ast.unparse(stmt.test):
            return None  # the script's body, not a condition of the step
        return file, stmt.lineno, k
    return None


def _branches(evidence: Evidence, cause: Cause, right: bool, files: tuple[str, ...]) -> Counter[Branch]:
    """The branches the instructions of one side of `cause` come from. An instruction with no
    line (autograd's backward) counts for none; one whose frames sit in no branch counts as
    outside (`("", 0, -1)`)."""
    canon = evidence.right if right else evidence.left
    found: Counter[Branch] = Counter()
    for c, ins in evidence.instructions(cause):
        frames = canon.module.frames_of(ins) if c is canon else ()
        if frames:
            found[_branch_of(frames, files) or ("", 0, -1)] += 1
    return found


def _branch_of(frames: tuple[Frame, ...], files: tuple[str, ...]) -> Branch | None:
    """The branch of the innermost user frame that sits in one; where a dump keeps the innermost
    frame only, a helper's line counts at its calls (all in one branch), and a library line at
    the user's lines that call its function (`cross_entropy(...)` for functional.py)."""
    users = user_frames(frames)
    for frame in users:
        if (b := _branch(location(frame))) is not None:
            return b
    if len(frames) > 1:
        return None  # a whole stack, in no branch
    return _called_from(location(frames[0]), files)


def _called_from(loc: str, files: tuple[str, ...]) -> Branch | None:
    return _called_from_in(loc, files, sources_key())


@lru_cache(maxsize=4096)
def _called_from_in(loc: str, files: tuple[str, ...], _sources: tuple[object, ...]) -> Branch | None:
    file, line = split_location(loc)
    name = enclosing_function(file, line)
    if not name:
        return None
    calls = calls_of(name, files, limit=4)
    found = {_branch(c) for c in calls}
    return found.pop() if calls and len(found) == 1 else None


def _cited(cause: Cause) -> tuple[str, ...]:
    return cause.sources[:6] + cause.library[:6]


def _tested(file: str, line: int) -> tuple[str, set[str], int]:
    """The condition's text, the names it reads (a name, or an attribute's last part) and the
    last line of the `if` statement."""
    tree = syntax_tree(file)
    ifs = (s for s in ast.walk(tree) if isinstance(s, ast.If) and s.lineno == line) if tree else iter(())
    stmt = next(ifs, None)
    if stmt is None:
        return "", set(), line
    # `self.smooth` tests `smooth`, not `self`
    owners = {id(n.value) for n in ast.walk(stmt.test) if isinstance(n, ast.Attribute)}
    names = {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name) and id(n) not in owners}
    names |= {n.attr for n in ast.walk(stmt.test) if isinstance(n, ast.Attribute)}
    return ast.unparse(stmt.test), names, stmt.end_lineno or line


def _set_during_run(file: str, names: set[str]) -> list[int]:
    """Lines that assign one of `names` as the run goes on: in a loop, a branch or a function
    (`LABEL_SMOOTHING = True` under `if step == k:`, `self.smooth = True` in a callback), not the
    module's own top-level statements nor a constructor, which set the first value once."""
    tree = syntax_tree(file)
    if tree is None:
        return []
    inits = (f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    top = {id(s) for s in tree.body} | {id(n) for f in inits for n in ast.walk(f)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) or id(node) in top:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            for n in ast.walk(t):
                if (isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Store)) or (
                    isinstance(n, ast.Attribute) and n.attr in names and isinstance(n.ctx, ast.Store)
                ):
                    found.append(node.lineno)
    return sorted(set(found))


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    work = [i for i, c in enumerate(pending) if c.kind in _KINDS and not c.info]
    files = tuple(user_files(evidence)) if work else ()
    # (Cheap first: some line a cause cites sits in a branch, or its function is called from one.)
    if not any(_branch_of((Frame("", *split_location(s)),), files) for i in work for s in _cited(pending[i])):
        return NOTHING
    sides = [Counter[Branch](), Counter[Branch]()]
    per_cause: dict[int, set[tuple[str, int]]] = {}
    for i in work:
        for right in (False, True):
            found = _branches(evidence, pending[i], right, files)
            sides[right] += found
            per_cause.setdefault(i, set()).update((f, n) for f, n, _ in found if f)
    # An `if` whose branches differ between the sides and that holds most of each side's own work.
    ifs = {(f, n) for f, n, _ in sides[0] if f} & {(f, n) for f, n, _ in sides[1] if f}
    for f, n in sorted(ifs):
        a = {k for (g, m, k), c in sides[0].items() if (g, m) == (f, n)}
        b = {k for (g, m, k), c in sides[1].items() if (g, m) == (f, n)}
        held = [sum(c for (g, m, _), c in s.items() if (g, m) == (f, n)) for s in sides]
        if a & b or any(h < _SHARE * sum(s.values()) for h, s in zip(held, sides, strict=True)):
            continue
        site = f"{f}:{n}"
        test, names, end = _tested(f, n)
        setters = [f"{f}:{k}" for k in _set_during_run(f, names) if not n <= k <= end]
        said = f", set at {', '.join(setters[:2])}" if setters else ""
        summary = (
            f"the step traced another branch of `if {test[:60]}` at {site}: the work of one branch "
            f"left the graph and another's came in; the Python value it tests ({', '.join(sorted(names))}"
            f"{said}) decides on the host which code the step traces"
        )
        picked = [i for i in work if (f, n) in per_cause.get(i, set())]
        # What the branches' work leaves without a line (the other branch's divisor, the backward
        # of its ops) is that work too, whichever graph took the branch.
        left = {x for i in picked for x in pending[i].left}
        right = {x for i in picked for x in pending[i].right}
        picked += [i for i in work if i not in picked and branch_residue(evidence, pending[i], left, right)]
        merged = merge(CauseKind.CONDITIONAL_WORK, summary, [pending[i] for i in picked], hint=_HINT)
        lines = tuple(dict.fromkeys([site, *setters[:2], *merged.sources]))[:6]
        return Recognized((replace(merged, sources=lines),), frozenset(picked))
    return NOTHING


RECOGNIZER = Recognizer("replaced_branch", _recognize)
