"""The entry's parameters wrapped in one tuple parameter, as PyTorch/XLA does past 3,200 of them
(each parameter becomes a get-tuple-element of the tuple, index = its number): the same program
with the same inputs, so every diff must give the same answer as on the unwrapped text.

`depth` nests the tuple (`((a, b))`, read through a chain of get-tuple-elements); `forwarded`
passes the innermost tuple through a `tuple` and reads it back by index, which forwarding
removes; `duplicate` reads every element twice, the second read feeding every other user. Like
transforms.py, this edits text with its own small parser, independent of xlagraph.
"""

from __future__ import annotations

import re

from tests.metamorphic.transforms import Entry, Ins, NotApplicable, _split

__all__ = ["wrap_parameters"]

_REPLICATION = re.compile(r",\s*parameter_replication=\{[^}]*\}")


def wrap_parameters(text: str, depth: int = 1, forwarded: bool = False, duplicate: bool = False) -> str:
    entry = Entry.parse(text)
    params = entry.params()
    if not params or sorted(params) != list(range(len(params))):
        raise NotApplicable("no parameters numbered 0..n-1")
    if any(p.shape.startswith("(") for p in params.values()):
        raise NotApplicable("tuple parameter")
    indent = params[0].indent
    sigil = params[0].sigil
    inner = "(" + ", ".join(params[k].shape for k in sorted(params)) + ")"
    shape = inner
    for _ in range(depth - 1):
        shape = f"({shape})"
    head: list[Ins] = [Ins(indent, False, sigil, "wrapped.args", shape, "parameter", "0", "")]
    holder, holder_shape = "wrapped.args", shape
    for level in range(depth - 1):
        holder_shape = holder_shape[1:-1]
        name = f"wrapped.level{level}"
        head.append(
            Ins(
                indent,
                False,
                sigil,
                name,
                holder_shape,
                "get-tuple-element",
                _ref(holder, sigil),
                ", index=0",
            )
        )
        holder = name
    if forwarded:
        head.append(Ins(indent, False, sigil, "wrapped.pass", f"({inner})", "tuple", _ref(holder, sigil), ""))
        head.append(
            Ins(
                indent,
                False,
                sigil,
                "wrapped.back",
                inner,
                "get-tuple-element",
                _ref("wrapped.pass", sigil),
                ", index=0",
            )
        )
        holder = "wrapped.back"
    body: list[Ins] = []
    twins: dict[str, str] = {}
    uses: dict[str, int] = {}
    for ins in entry.body:
        if ins.opcode == "parameter":
            number = int(ins.args.strip())
            rest = _REPLICATION.sub("", ins.rest)
            body.append(
                Ins(
                    ins.indent,
                    False,
                    ins.sigil,
                    ins.name,
                    ins.shape,
                    "get-tuple-element",
                    _ref(holder, sigil),
                    f", index={number}{rest}",
                )
            )
            if duplicate:
                twin = f"{ins.name}.again"
                twins[ins.name] = twin
                body.append(
                    Ins(
                        ins.indent,
                        False,
                        ins.sigil,
                        twin,
                        ins.shape,
                        "get-tuple-element",
                        _ref(holder, sigil),
                        f", index={number}",
                    )
                )
            continue
        if twins:
            ins = _read_twins(ins, twins, uses)
        body.append(ins)
    entry.body = [*head, *body]
    return entry.text()


def _ref(name: str, sigil: str) -> str:
    return f"{sigil}{name}"


def _read_twins(ins: Ins, twins: dict[str, str], uses: dict[str, int]) -> Ins:
    """`ins` with every other use of each parameter (counted in `uses`) read through its twin."""
    if ins.opcode == "constant":
        return ins
    parts = []
    for part in _split(ins.args):
        head, _, last = part.rpartition(" ")
        sig = "%" if last.startswith("%") else ""
        name = last.lstrip("%")
        if name in twins:
            uses[name] = uses.get(name, 0) + 1
            if uses[name] % 2 == 0:
                name = twins[name]
        parts.append(f"{head} {sig}{name}".strip())
    return Ins(ins.indent, ins.root, ins.sigil, ins.name, ins.shape, ins.opcode, ", ".join(parts), ins.rest)
