"""A module's entry `call`s replaced in its text by their callees' bodies, as XLA's CallInliner
replaces them before compiling: the true answer between the two texts is `identical` (issue 37).

Written on the text, apart from the engine's inliner (rust/src/canon/inline.rs), so that the
engine is held to a transformation it did not make: each callee instruction is copied under a
name of its own (`<name>.inl<k>`), its parameters read as the call's operands, and its root takes
the call's name, so the call's users are untouched; a callee nothing calls any more is removed.
"""

from __future__ import annotations

import re

from tests.metamorphic.transforms import Entry, Ins, NotApplicable, _balanced, _parse_ins, _split

_COMP_HEAD = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\)\s*->\s*.*)?\{\s*$")
_TO_APPLY = re.compile(r"\bto_apply=%?([\w.\-]+)")


def _computations(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Each non-entry computation's name and its lines (header to closing brace)."""
    out: dict[str, tuple[int, int]] = {}
    k = 0
    while k < len(lines):
        m = _COMP_HEAD.match(lines[k])
        if m and not m.group(1):
            end = next((j for j in range(k + 1, len(lines)) if lines[j].strip() == "}"), None)
            if end is None:
                raise NotApplicable("computation not closed")
            out[m.group(2)] = (k, end)
            k = end
        k += 1
    return out


def _composite_only(rest: str) -> bool:
    """The call's frontend attributes, if any, are a composite's (XLA drops them as it inlines)."""
    at = rest.find("frontend_attributes={")
    if at < 0:
        return True
    start = rest.index("{", at)
    entries = _split(rest[start + 1 : _balanced(rest, start) - 1])
    return all(e.split("=")[0].strip().startswith("composite.") for e in entries if e)


def _body(lines: list[str], span: tuple[int, int]) -> list[Ins]:
    body = []
    for line in lines[span[0] + 1 : span[1]]:
        if not line.strip():
            continue
        ins = _parse_ins(line)
        if ins is None:
            raise NotApplicable(f"unreadable callee line {line[:60]!r}")
        body.append(ins)
    return body


def _with_operands(ins: Ins, names: list[str]) -> str:
    """`ins.args` with each operand's name (its last word) replaced, in order."""
    parts = [a for a in _split(ins.args) if a]
    if len(parts) != len(names):
        raise NotApplicable("operands this reader cannot rewrite")
    return ", ".join(
        " ".join([*p.split()[:-1], ("%" if p.split()[-1].startswith("%") else "") + n])
        for p, n in zip(parts, names, strict=True)
    )


def inline_entry_calls(text: str) -> str:
    """The module with every `call` of its entry inlined (repeatedly: calls in the callees too).
    NotApplicable where the entry has no call, or one this transformation does not take (a
    backend config, frontend attributes other than a composite's, a callee that returns a
    parameter, control predecessors)."""
    entry = Entry.parse(text)
    if not any(i.opcode == "call" for i in entry.body):
        raise NotApplicable("no call in the entry")
    called = {n for n in _computations(entry.before) if _named(n, text)}
    site = 0
    while any(i.opcode == "call" for i in entry.body):
        lines = entry.before
        comps = _computations(lines)
        body: list[Ins] = []
        for ins in entry.body:
            if ins.opcode != "call":
                body.append(ins)
                continue
            m = _TO_APPLY.search(ins.rest)
            if not m or m.group(1) not in comps:
                raise NotApplicable("a call whose callee this reader cannot find")
            if "backend_config" in ins.rest or not _composite_only(ins.rest):
                raise NotApplicable("a call XLA may keep")
            callee = _body(lines, comps[m.group(1)])
            if any("control-predecessors" in c.rest for c in callee):
                raise NotApplicable("control predecessors in a callee")
            roots = [c for c in callee if c.root] or callee[-1:]
            operands = ins.operands
            site += 1
            rename: dict[str, str] = {}
            for c in callee:
                if c.opcode == "parameter":
                    rename[c.name] = operands[int(c.args.strip())]
                elif c is roots[0]:
                    rename[c.name] = ins.name
                else:
                    rename[c.name] = f"{c.name}.inl{site}"
            if roots[0].opcode == "parameter":
                raise NotApplicable("a callee that returns a parameter")
            for c in callee:
                if c.opcode == "parameter":
                    continue
                args = (
                    c.args if c.opcode == "constant" else _with_operands(c, [rename[o] for o in c.operands])
                )
                body.append(
                    Ins(
                        ins.indent,
                        ins.root and c is roots[0],
                        c.sigil,
                        rename[c.name],
                        c.shape,
                        c.opcode,
                        args,
                        c.rest,
                    )
                )
        entry.body = body
        entry.before = _drop_uncalled(lines, entry, called)
        if site > 100:
            raise NotApplicable("calls nested too deep")
    return entry.text()


def _named(name: str, text: str) -> bool:
    return re.search(r"[=,{]\s*%?" + re.escape(name) + r"(?![\w.\-])", text) is not None


def _drop_uncalled(lines: list[str], entry: Entry, called: set[str]) -> list[str]:
    """The lines before the entry without the computations of `called` nothing names any more."""
    body = [i.text() for i in entry.body]
    while True:
        for name, (start, end) in _computations(lines).items():
            if name in called and not _named(name, "\n".join(lines[:start] + lines[end + 1 :] + body)):
                lines = lines[:start] + lines[end + 1 :]
                break
        else:
            return lines
