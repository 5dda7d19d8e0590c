"""The last guard against a wrong `identical`: what the canonical hashes tell apart but no raw
comparison named.

The comparison layer is tolerant on purpose (commutative operands pair either way, a called
computation whose callers match is compared only through its instructions), so a few real
differences can slip through it: `multiply(a, b)` vs `multiply(b, a)` (torch_xla hashes operand
order, so that recompiles), a reducer or comparator whose parameters are renumbered, a `call`
whose tuple comes out in another order. When the canonical forms differ and nothing else was
found, this says where they differ instead of letting the verdict be `identical`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from math import prod

from xlagraph._kept import kept_while_alive
from xlagraph.canonical import CanonicalComputation, CanonicalModule
from xlagraph.diagnose.causes import Cause, CauseKind, Change
from xlagraph.diagnose.fixes import fix
from xlagraph.diagnose.recognizers._dataflow import upstream
from xlagraph.diagnose.shapes import dim_sizes
from xlagraph.diagnose.sources import sources_of
from xlagraph.ir import strip_layout
from xlagraph.match import Matching
from xlagraph.parse.hlo import split_top_level

__all__ = [
    "ELIDED",
    "constants_of",
    "elided_constants",
    "is_elided",
    "residual_differences",
    "unseen_constants",
]

# How XLA prints a literal of more than 10 elements unless asked to print large constants.
ELIDED = "{...}"

_LISTED = 4
_OPERAND_ORDER_HINT = fix("structure.operand_order")


def residual_differences(
    left: CanonicalModule,
    right: CanonicalModule,
    pairs: Iterable[tuple[str, str, Matching | None]],
) -> tuple[Cause, ...]:
    """One cause when the canonical forms differ but nothing named the difference, else none."""
    if left.fingerprint == right.fingerprint and left.order == right.order:
        return _entry_layout(left, right)
    changes: list[Change] = []
    interfaces: list[str] = []  # not compared instruction by instruction
    unnamed: list[str] = []  # compared, every matched instruction alike: nothing to name
    where_l: list[tuple[CanonicalModule, CanonicalComputation, tuple[str, ...]]] = []
    where_r: list[tuple[CanonicalModule, CanonicalComputation, tuple[str, ...]]] = []
    elided_only = False
    for ln, rn, m in pairs:
        lc, rc = left.computations[ln], right.computations[rn]
        if lc.hash == rc.hash:
            continue
        found = _instruction_changes(lc, rc, m) if m is not None else []
        changes += found
        if m is not None and not found and _only_elided(lc, rc, m):
            elided_only = True
            continue
        if found:
            where_l.append((left, lc, tuple(c.left for c in found)))
            where_r.append((right, rc, tuple(c.right for c in found)))
        else:
            (interfaces if m is None else unnamed).append(ln if ln == rn else f"{ln} / {rn}")
    if elided_only and not changes and not interfaces and not unnamed:
        return ()  # only values one dump did not print: said in a note (elided_constants)
    operand_order = [c for c in changes if c.what == "operand order"]
    if operand_order and len(operand_order) == len(changes) and not interfaces and not unnamed:
        summary = (
            f"{len(operand_order)} op(s) take the same operands in another order ("
            + ", ".join(f"{c.left}: {c.old} -> {c.new}" for c in operand_order[:_LISTED])
            + ")"
        )
        hint = _OPERAND_ORDER_HINT
    else:
        # Each kind of residue there is, its first few named in its own words.
        listed = [f"{c.left}: {c.what}" for c in changes[:_LISTED]]
        said = (
            (listed, f"{len(changes)} instruction(s) differ (", ")"),
            (interfaces, "called computation(s) ", " differ in their parameter numbering or output order"),
            # (no guess: their instructions were compared and agree in content)
            (unnamed, "computation(s) ", " differ although each matched instruction has the same content"),
        )
        parts = [head + ", ".join(items[:_LISTED]) + tail for items, head, tail in said if items]
        summary = "; ".join(parts) or "the canonical forms differ (fingerprint or input/output order)"
        hint = _OPERAND_ORDER_HINT if interfaces else ""
    names_l = tuple(c.left for c in changes)
    names_r = tuple(c.right for c in changes)
    user, library = sources_of(where_r + where_l, [])
    cause = Cause(
        CauseKind.STRUCTURE,
        f"{summary}; this is not a pattern xlagraph knows, but the graphs are not the same",
        hint or fix("structure.residue"),
        names_l,
        names_r,
        changes=tuple(changes[: _LISTED * 4]),
        sources=user,
        library=library,
        computation=left.module.entry.name,
        count=max(1, len(changes) + len(interfaces) + len(unnamed)),
    )
    return (cause,)


def _instruction_changes(lc: CanonicalComputation, rc: CanonicalComputation, m: Matching) -> list[Change]:
    """Matched instructions whose structural hash differs although their content is the same."""
    out: list[Change] = []
    for a in lc.order:
        b = m.left.get(a)
        if b is None or lc.h1[a] == rc.h1[b]:
            continue
        if lc.keys[a] != rc.keys[b]:
            continue  # a content change: the comparison layer names those (elided values: not)
        if a in lc.param_number and b in rc.param_number:
            na, nb = lc.param_number[a], rc.param_number[b]
            if na != nb:
                out.append(Change(a, b, "parameter number", str(na), str(nb)))
            continue
        oa, ob = lc.operands[a], rc.operands[b]
        mapped = tuple(m.left.get(o, "?") for o in oa)
        if sorted(mapped) == sorted(ob) and mapped != ob:
            out.append(Change(a, b, "operand order", ", ".join(oa), ", ".join(m.right.get(o, o) for o in ob)))
        elif _upstream_differs(lc, rc, m, oa, ob):
            continue  # follows from a difference further up, reported there
        else:
            out.append(Change(a, b, "operands", ", ".join(oa) or "(none)", ", ".join(ob) or "(none)"))
    return out


def _upstream_differs(
    lc: CanonicalComputation, rc: CanonicalComputation, m: Matching, oa: tuple[str, ...], ob: tuple[str, ...]
) -> bool:
    return len(oa) == len(ob) and any(
        m.left.get(x) == y and lc.h1[x] != rc.h1[y] for x, y in zip(oa, ob, strict=True)
    )


def _entry_layout(left: CanonicalModule, right: CanonicalModule) -> tuple[Cause, ...]:
    """The module header's `entry_computation_layout` is an input of the compile: the same
    computation with another entry layout is another program (XLA accepts a layout that even
    disagrees with the parameters' shapes)."""
    la = left.module.header_attribute("entry_computation_layout") or ""
    lb = right.module.header_attribute("entry_computation_layout") or ""
    la, lb = "".join(la.split()), "".join(lb.split())
    if not (la and lb):
        return ()
    if _signature(la) != _signature(lb):
        what = "other entry shapes"
    elif _input_layouts(la) != _input_layouts(lb):
        # The executable expects its arguments in the declared layouts. Output orders alone are
        # not compared: torch_xla's IrToHlo print of a graph gives its outputs other header
        # layouts than the module it compiles for the same graph hash.
        what = "other input layouts"
    else:
        return ()
    return (
        Cause(
            CauseKind.LAYOUT,
            f"the same computation declared with {what} in its entry_computation_layout "
            f"({_clip(la)} -> {_clip(lb)}): XLA compiles the program for the declared signature",
            "keep the layouts of the step's inputs and outputs the same on every step",
            changes=(Change("", "", "entry_computation_layout", la, lb),),
            computation=left.module.entry.name,
        ),
    )


def _signature(layout: str) -> str:
    """`{(f32[4,16]{1,0},/*index=5*/f32[])->...}` -> `(f32[4,16],f32[])->...`: shapes only."""
    return strip_layout(layout[1:-1] if layout.startswith("{") else layout)


def _input_layouts(layout: str) -> tuple[str, ...]:
    """The parameters of `{(f32[4,16]{1,0},/*index=5*/f32[2])->...}`, each with its layout spelled
    out (an array printed without one has the default, major-to-minor, layout)."""
    body = _COMMENT.sub("", layout).strip("{}")
    params, arrow, _ = body.partition(")->")
    if not arrow or not params.startswith("("):
        return ()
    return tuple(_DEFAULT_LAYOUT.sub(_spell_default, p) for p in split_top_level(params[1:]) if p)


_COMMENT = re.compile(r"/\*.*?\*/")
# An array shape not followed by a layout: `f32[4,16]` (but not `f32[4,16]{`).
_DEFAULT_LAYOUT = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\](?!\{)")


def _spell_default(m: re.Match[str]) -> str:
    rank = len([d for d in m.group(2).split(",") if d]) if m.group(2) else 0
    order = ",".join(str(d) for d in range(rank - 1, -1, -1))
    return f"{m.group(1)}[{m.group(2)}]{{{order}}}" if rank else m.group(0)


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def constants_of(comp: CanonicalComputation) -> list[str]:
    """The live constants of `comp`, picked at C speed: every diff asks, of every instruction
    (and a report of each computation again in every diff it is part of: kept while it lives)."""
    return list(_live_constants(comp))


@kept_while_alive
def _live_constants(comp: CanonicalComputation) -> tuple[str, ...]:
    return comp.core.live_constants()  # type: ignore[attr-defined]  # the handle knows each one's opcode


def is_elided(ins_payload: str) -> bool:
    return ins_payload.replace(" ", "") == ELIDED


def _elided_pairs(lc: CanonicalComputation, rc: CanonicalComputation, m: Matching) -> list[tuple[str, str]]:
    """Matched constants of one shape and different values as printed, one of them `{...}`."""
    return _elided(lc, rc, m)[0]


def _elided(
    lc: CanonicalComputation, rc: CanonicalComputation, m: Matching | None
) -> tuple[list[tuple[str, str]], list[str]]:
    """In one pass over the left side's constants: the pairs one dump prints as `{...}`
    (`_elided_pairs`), and the constants both print so (a computation the same on both sides pairs
    each constant with itself)."""
    one: list[tuple[str, str]] = []
    both: list[str] = []
    constants = constants_of(lc)
    if not constants:
        return one, both
    lins, rins = lc.computation.by_name, rc.computation.by_name
    # Only a constant printed `{...}` on one side or the other is either kind: those are
    # picked first (a 600K-instruction graph has 86K constants and a handful elided).
    el_l, el_r = _elided_names(lc), _elided_names(rc)
    if not (el_l or el_r):
        return one, both
    counterpart = (lambda a: a) if m is None else m.left.get
    for a in [a for a in constants if a in el_l or counterpart(a) in el_r]:
        b = a if m is None else m.left.get(a)
        ib = rins.get(b) if b is not None else None
        if ib is None or ib.opcode != "constant":
            continue
        left_elided, right_elided = is_elided(lins[a].payload), is_elided(ib.payload)
        if left_elided and right_elided:
            both.append(a)
        elif (left_elided or right_elided) and m is not None and lc.keys[a] != rc.keys[b]:
            one.append((a, b))
    return one, both


@kept_while_alive
def _elided_names(comp: CanonicalComputation) -> frozenset[str]:
    """Names whose instruction (as `by_name` has it) is a constant printed `{...}`; kept while
    `comp` lives."""
    # Picked by the core as it read them.
    return comp.core.elided_names()  # type: ignore[attr-defined]


def _only_elided(lc: CanonicalComputation, rc: CanonicalComputation, m: Matching) -> bool:
    """Every difference of the pair is a constant whose value one dump did not print."""
    elided = {a for a, _ in _elided_pairs(lc, rc, m)}
    if not elided:
        return False
    if all(
        a in elided or lc.h1[a] == rc.h1[b] or any(o in elided for o in upstream(lc.operands, (a,)))
        for a, b in m.left.items()
        if a in lc.h1 and b in rc.h1
    ):
        return True
    return _same_but(lc, rc, m, elided)


def _same_but(lc: CanonicalComputation, rc: CanonicalComputation, m: Matching, skip: set[str]) -> bool:
    """Instruction for instruction the same computation, but for the constants in `skip`: every
    live instruction matched, with the same content and its operands matched in order, and the
    same parameter numbers and outputs (canonical ranks and hashes cover the skipped values too,
    so they are not compared)."""
    if len(m.left) != len(lc.order) or len(m.right) != len(rc.order):
        return False
    if [m.left.get(o) for o in lc.outputs] != list(rc.outputs):
        return False
    for a, b in m.left.items():
        if a not in skip and lc.keys.get(a) != rc.keys.get(b):
            return False
        if lc.param_number.get(a) != rc.param_number.get(b):
            return False
        if [m.left.get(o) for o in lc.operands.get(a, ())] != list(rc.operands.get(b, ())):
            return False
    return True


def unseen_constants(
    left: CanonicalModule, right: CanonicalModule, pairs: Iterable[tuple[str, str, Matching | None]]
) -> tuple[str, ...]:
    """A's constants whose values one dump or both print as `{...}`: where two graphs that print
    the same may still differ (the verdict is then `undetermined`, never `identical`)."""
    out: list[str] = []
    for ln, rn, m in pairs:
        lc, rc = left.computations[ln], right.computations[rn]
        one, both = _elided(lc, rc, m)
        prefix = "" if ln == left.entry.name else f"{ln}/"
        out += [prefix + a for a in [*both, *(a for a, _ in one)]]
        if lc.computation.instructions and "lazy-ir" in (left.module.format, right.module.format):
            lins = lc.computation.by_name
            # torch_xla's lazy IR text prints no constant value at all (`prim::Constant()`): an
            # arange or a table of many elements may differ unseen (scalars as HLO prints them).
            out += [
                a
                for a in lc.order
                if lins[a].opcode == "prim::Constant"
                and (dims := dim_sizes(lins[a].shape))
                and prod(dims) > 1
            ]
    return tuple(out)


def elided_constants(
    left: CanonicalModule, right: CanonicalModule, pairs: Iterable[tuple[str, str, Matching | None]]
) -> list[str]:
    """A note per computation where constants were compared by shape only because one dump
    printed `{...}` for them."""
    notes = []
    hidden = 0  # constants neither dump prints: equal as far as the text shows
    for ln, rn, m in pairs:
        found, both = _elided(left.computations[ln], right.computations[rn], m)
        hidden += len(both)
        if found:
            names = ", ".join(a for a, _ in found[:_LISTED])
            notes.append(
                f"{len(found)} constant(s) ({names}) are printed as {ELIDED} in one dump: compared by shape "
                f"only; {_DUMP_VALUES}"
            )
    if hidden > 0:
        notes.append(
            f"{hidden} constant(s) are printed as {ELIDED} in both dumps: their values are not in the "
            f"text, so they were compared by shape only; {_DUMP_VALUES}"
        )
    return notes


# How a user gets the values printed (XLA's print_large_constants behind the flag).
_DUMP_VALUES = (
    "to compare values, dump with large constants printed (XLA_FLAGS=--xla_dump_large_constants=true "
    "with --xla_dump_to), or compare runs captured by xlagraph, which keep torch_xla's graph hashes"
)
