"""The computations and instructions of a StableHLO module as XLA's own export writes them
(hlo_text.py prints them, with the line of the user's file each one stands for).

Where StableHLO and HLO differ in structure, this follows xla/hlo/translate/mhlo_to_hlo: a
function is a computation (`main`, or the one public function, is ENTRY), `func.call` a `call`,
each region a computation of its own; an operation of several results has a tuple shape and its
results are `get-tuple-element`s; `while` carries one tuple; a region of `case`/`if` receives the
values it uses from outside as its one parameter (the value itself when there is one, else a
tuple), and `while` carries them through its body. Per-operation translation is ops.py's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.stablehlo_reference.locations import Locations
from tests.stablehlo_reference.mlir_types import TypeError_, hlo_shape, split_types
from tests.stablehlo_reference.shardy_meshes import read_meshes
from tests.stablehlo_reference.structure import (
    Func,
    MlirModule,
    Op,
    Region,
    StructureError,
    matching,
    split_top,
)
from tests.stablehlo_reference.structure import strip_loc as _strip_loc

__all__ = ["Comp", "Emitter", "TranslateError", "Value", "carry", "parse_signature", "quote", "sanitize"]

REF = re.compile(r"%[\w.$-]+(?:#\d+)?(?![\w.$#-])(?!\s*=[^=])")
_IDENT = re.compile(r"[^A-Za-z0-9_.-]")
_KEY = re.compile(r"[^A-Za-z0-9_.-]")
# Argument attributes the translation reads (the header's donation, the parameter's sharding).
_ARG_READ = frozenset({"mhlo.sharding", "sdy.sharding", "tf.aliasing_output", "jax.buffer_donor"})
# What XLA's Shardy export writes for a function result's `sdy.sharding` (export_shardy_attrs.cc).
FUNC_RESULT_SHARDING = "xla.sdy.FuncResultSharding"
SDY_FRONTEND = "xla.sdy.sharding"
_TERMINATORS = ("stablehlo.return", "return", "func.return", "mhlo.return")
_RETURN_INSIDE = re.compile(r"\s(?:func\.|stablehlo\.)?return\s")  # a return after an operation, one line


class TranslateError(StructureError):
    """An operation this reader cannot write as HLO: `(message, line)`."""


@dataclass
class Value:
    """An HLO value: the instruction's name and shape; `elements` for an operation of several
    results (a tuple whose elements MLIR names `%x#k`)."""

    name: str
    shape: str
    elements: list[str] | None = None


@dataclass
class Inst:
    name: str
    shape: str
    opcode: str
    operands: list[str]
    attrs: list[str]
    line: int
    root: bool = False


@dataclass
class Comp:
    name: str
    line: int
    insts: list[Inst] = field(default_factory=list)
    values: dict[str, Value] = field(default_factory=dict)
    elements: dict[str, Value] = field(default_factory=dict)  # `%x#k` already extracted
    entry: bool = False


def sanitize(name: str) -> str:
    s = _IDENT.sub("_", name)
    return s if s[:1].isalpha() or s[:1] == "_" else "_" + s


def refs_of(op: Op) -> list[str]:
    """The values an operation reads, in the order written (a while's `%iterArg =` defines)."""
    return REF.findall(op.text)


def free_refs(region: Region) -> list[str]:
    """The values a region reads from outside it, in order of first use."""
    defined = {a for a, _ in region.args}
    seen: dict[str, None] = {}

    def walk(ops: list[Op], defined: set[str]) -> None:
        for op in ops:
            for ref in refs_of(op):
                if ref.split("#")[0] not in defined:
                    seen.setdefault(ref, None)
            for r in op.regions:
                walk(r.ops, defined | {a for a, _ in r.args})
            defined.update(name for name, _ in op.results)

    walk(region.ops, set(defined))
    return list(seen)


class Emitter:
    """`translate(emitter, comp, op)` writes one operation (ops.py, which builds on this module)."""

    def __init__(self, module: MlirModule, translate: Callable[[Emitter, Comp, Op], None]) -> None:
        self.translate = translate
        self.module = module
        self.locs = Locations(module.locs)
        self.funcs = {f.name: f for f in module.funcs}
        self.done: dict[str, str] = {}
        self.busy: set[str] = set()
        self.comps: list[Comp] = []
        self.count = 0
        self.header: list[tuple[str, str]] = []
        self.meshes = read_meshes(module.meshes)

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"{sanitize(base)}.{self.count}"

    # -- instructions ------------------------------------------------------------------------

    def inst(
        self,
        comp: Comp,
        opcode: str,
        shape: str,
        operands: list[Value],
        attrs: list[str],
        line: int,
        loc: str = "",
        base: str = "",
    ) -> Value:
        meta = self.metadata(loc)
        inst = Inst(
            self.fresh(base or opcode),
            shape,
            opcode,
            [v.name for v in operands],
            attrs + ([meta] if meta else []),
            line,
        )
        comp.insts.append(inst)
        return Value(inst.name, shape)

    def metadata(self, loc: str) -> str:
        op_name, file, line = self.locs.resolve(loc)
        parts = []
        if op_name:
            parts.append(f"op_name={quote(op_name)}")
        if file:
            parts.append(f"source_file={quote(file)} source_line={line}")
        return "metadata={" + " ".join(parts) + "}" if parts else ""

    def element(self, comp: Comp, value: Value, k: int, line: int) -> Value:
        assert value.elements is not None
        key = f"{value.name}#{k}"
        got = comp.elements.get(key)
        if got is None:
            got = self.inst(comp, "get-tuple-element", value.elements[k], [value], [f"index={k}"], line)
            comp.elements[key] = got
        return got

    def lookup(self, comp: Comp, ref: str, line: int) -> Value:
        if "#" in ref and ref in comp.values:  # an element passed into a region on its own
            return comp.values[ref]
        base, _, index = ref.partition("#")
        value = comp.values.get(base)
        if value is None:
            raise TranslateError(f"value {ref} is not defined where it is used", line)
        if value.elements is None:
            if index and index != "0":
                raise TranslateError(f"value {ref}: {base} has one result", line)
            return value
        if not index:
            if len(value.elements) == 1:
                return self.element(comp, value, 0, line)
            raise TranslateError(f"value {ref} has {len(value.elements)} results: name one (#k)", line)
        k = int(index)
        if k >= len(value.elements):
            raise TranslateError(f"value {ref}: {base} has {len(value.elements)} results", line)
        return self.element(comp, value, k, line)

    def bind(self, comp: Comp, op: Op, value: Value) -> None:
        """Name the operation's results: `%x` for one, `%x:3` (or `%a, %b`) for a tuple's."""
        if not op.results:
            return
        if len(op.results) == 1:
            name, count = op.results[0]
            got = 1 if value.elements is None else len(value.elements)
            if got != count:
                raise TranslateError(f"{op.name} has {got} results, named as {count}", op.line)
            comp.values[name] = value
            return
        if value.elements is None or len(value.elements) != len(op.results):
            raise TranslateError(
                f"{op.name}: results named apart are read for operations of several results", op.line
            )
        for k, (name, _) in enumerate(op.results):
            comp.values[name] = self.element(comp, value, k, op.line)

    # -- computations ------------------------------------------------------------------------

    def computation(
        self,
        name: str,
        line: int,
        params: list[list[tuple[str, str]]],
        ops: list[Op],
        *,
        tuple_root: bool = False,
        carry: list[str] | None = None,
        tuple_param: bool = False,
        result_shardings: list[str] | None = None,
    ) -> tuple[str, list[str]]:
        """A computation of `ops`: each parameter binds one value (`[(key, HLO shape)]`) or,
        given several (or always, `tuple_param`), a tuple whose elements bind them. Its root:
        the returned value, a tuple of several (or always, `tuple_root`), with `carry`'s values
        appended; `result_shardings` (Shardy's, per result, "" for none) pass each such result
        through XLA's `xla.sdy.FuncResultSharding` custom call. Returns its name and the
        returned values' shapes."""
        comp = Comp(name, line)
        for number, group in enumerate(params):
            shapes = [shape for _, shape in group]
            if len(group) == 1 and not tuple_param:
                comp.values[group[0][0]] = self.inst(comp, "parameter", shapes[0], [], [], line, base="Arg")
                comp.insts[-1].opcode = f"parameter({number})"
                continue
            whole = self.inst(
                comp, "parameter", "(" + ", ".join(shapes) + ")", [], [], line, base="arg_tuple"
            )
            comp.insts[-1].opcode = f"parameter({number})"
            whole.elements = shapes
            for k, (key, _) in enumerate(group):
                comp.values[key] = self.element(comp, whole, k, line)
        if not ops or ops[-1].name not in _TERMINATORS:
            # MLIR reads `%0 = stablehlo.add ...  func.return %0 ...` on one line (openxla/xla's
            # translate tests); this reader takes one operation a line, so it names that line.
            shared = next((op for op in ops if _RETURN_INSIDE.search(op.text)), None)
            if shared is not None:
                raise TranslateError(
                    f"computation {name}: its return shares a line with {shared.name} "
                    "(one operation a line is read)",
                    shared.line,
                )
            raise TranslateError(f"computation {name} has no return", ops[-1].line if ops else line)
        for op in ops[:-1]:
            if op.name in _TERMINATORS:
                raise TranslateError(f"{op.name} before the end of its region", op.line)
            self.translate(self, comp, op)
        ret = ops[-1]
        returned = [self.lookup(comp, r, ret.line) for r in refs_of(ret)]
        returned += [self.lookup(comp, r, ret.line) for r in carry or []]
        for k, text in enumerate(result_shardings or []):
            if text:  # Shardy's, as XLA keeps it
                returned[k] = self._func_result(comp, returned[k], text, ret.line)
        if any(result_shardings or []) and len(returned) == 1:  # the export's tuple, then its element
            whole = self.inst(comp, "tuple", f"({returned[0].shape})", returned, [], ret.line)
            whole.elements = [returned[0].shape]
            shape = whole.shape[1:-1]
            returned = [self.inst(comp, "get-tuple-element", shape, [whole], ["index=0"], ret.line)]
        if len(returned) == 1 and not tuple_root:
            root = returned[0]
            if root.name not in {i.name for i in comp.insts}:  # never: values are this computation's
                raise TranslateError("returned value is not of this computation", ret.line)
            for i in comp.insts:
                i.root = i.name == root.name
        else:
            self.inst(
                comp,
                "tuple",
                "(" + ", ".join(v.shape for v in returned) + ")",
                returned,
                [],
                ret.line,
                ret.loc,
            )
            comp.insts[-1].root = True
        self.comps.append(comp)
        return name, [v.shape for v in returned]

    def _shardy(self, attrs: dict[str, str], line: int) -> tuple[str, str]:
        """An argument's or result's `sdy.sharding`: (HLO sharding, the text XLA keeps); ("", "")
        for none."""
        return self.meshes.sharding(attrs["sdy.sharding"], line) if "sdy.sharding" in attrs else ("", "")

    def _func_result(self, comp: Comp, value: Value, text: str, line: int) -> Value:
        per_value = "#sdy.sharding_per_value<[" + text.strip().removeprefix("#sdy.sharding") + "]>"
        attrs = [
            f'custom_call_target="{FUNC_RESULT_SHARDING}"',
            "custom_call_has_side_effect=true",
            f"frontend_attributes={{{SDY_FRONTEND}={quote(per_value)}}}",
        ]
        return self.inst(comp, "custom-call", value.shape, [value], attrs, line)

    def region(
        self, region: Region, params: list[list[tuple[str, str]]], **kw: object
    ) -> tuple[str, list[str]]:
        return self.computation(self.fresh("region"), region.line, params, region.ops, **kw)  # type: ignore[arg-type]

    def func(self, name: str, line: int) -> str:
        """The computation of function `name`, written first if it is not yet."""
        if name in self.done:
            return self.done[name]
        f = self.funcs.get(name)
        if f is None:
            raise TranslateError(f"call of @{name}, which the module does not define", line)
        if name in self.busy:
            raise TranslateError(f"@{name} calls itself (recursion has no HLO form)", line)
        self.busy.add(name)
        try:
            args, results = parse_signature(f)
            if f.body.args:
                raise TranslateError("function body with block arguments", f.line)
            self.done[name] = self._write_func(f, args, results)
        except TypeError_ as e:  # of the signature: the operations' own name their lines
            raise TranslateError(f"@{f.name}: {e}", f.line) from None
        self.busy.discard(name)
        return self.done[name]

    def _write_func(
        self, f: Func, args: list[tuple[str, str, dict[str, str]]], results: list[tuple[str, dict[str, str]]]
    ) -> str:
        shardy = [self._shardy(_one_sharding(a, f.line), f.line) for _, _, a in args]
        shardy_results = [self._shardy(_one_sharding(a, f.line), f.line) for _, a in results]
        name, _ = self.computation(
            sanitize(f.name),
            f.line,
            [[(a, hlo_shape(t))] for a, t, _ in args],
            f.body.ops,
            result_shardings=[text for _, text in shardy_results],
        )
        comp = self.comps[-1]
        for number, (_, _, attrs) in enumerate(args):
            param = next(i for i in comp.insts if i.opcode == f"parameter({number})")
            frontend = {}
            if "mhlo.sharding" in attrs:
                param.attrs.append("sharding=" + unquote(attrs["mhlo.sharding"]))
            if "sdy.sharding" in attrs:
                param.attrs.append("sharding=" + shardy[number][0])
                frontend[SDY_FRONTEND] = shardy[number][1]
            rest = carry({k: v for k, v in attrs.items() if k not in _ARG_READ}, frontend)
            if rest:
                param.attrs.append(rest)
        shardings = [
            unquote(a["mhlo.sharding"]) if "mhlo.sharding" in a else hlo
            for (_, a), (hlo, _) in zip(results, shardy_results, strict=True)
        ]
        if any(shardings):
            root = next(i for i in comp.insts if i.root)
            if len(results) == 1:
                root.attrs.append(f"sharding={shardings[0]}")
            else:
                root.attrs.append("sharding={" + ", ".join(s or "{replicated}" for s in shardings) + "}")
        return name


def _one_sharding(attrs: dict[str, str], line: int) -> dict[str, str]:
    if "mhlo.sharding" in attrs and "sdy.sharding" in attrs:
        raise TranslateError("both mhlo.sharding and sdy.sharding on one value: which is it?", line)
    return attrs


def parse_signature(
    f: Func,
) -> tuple[list[tuple[str, str, dict[str, str]]], list[tuple[str, dict[str, str]]]]:
    """A function's arguments `(name, type, attributes)` and results `(type, attributes)`."""
    sig = f.signature
    close = matching(sig, 0)
    if not sig.startswith("(") or close < 0:
        raise TranslateError(f"malformed signature of @{f.name}", f.line)
    args = []
    for part in split_top(sig[1:close]):
        part, _ = _strip_loc(part)
        name, _, rest = part.partition(":")
        type_, attrs = _type_and_attrs(rest)
        args.append((name.strip(), type_, attrs))
    rest = sig[close + 1 :].strip()
    results = []
    if rest.startswith("->"):
        for part in split_types(rest[2:].strip()):
            results.append(_type_and_attrs(part))
    return args, results


def _type_and_attrs(text: str) -> tuple[str, dict[str, str]]:
    parts = split_top(text.strip(), " {")
    type_ = parts[0] if parts else ""
    attrs = attr_dict("{" + parts[1]) if len(parts) > 1 else {}
    return type_.strip(), attrs


def attr_dict(text: str) -> dict[str, str]:
    """`{a = 1 : i64, b, c = "x"}` (or `<{...}>`) -> {"a": "1 : i64", "b": "true", "c": '"x"'}."""
    t = text.strip()
    if t.startswith("<{"):
        t = t[1:-1]
    out: dict[str, str] = {}
    for part in split_top(t[1:-1]):
        key, sep, value = part.partition("=")
        out[key.strip().strip('"')] = value.strip() if sep else "true"
    return out


def carry(attrs: dict[str, str], frontend: dict[str, str] | None = None) -> str:
    """The instruction's frontend attributes: `frontend` (`mhlo.frontend_attributes`) as they are,
    and the attributes the translation does not read as `stablehlo.<name>`: they enter the
    instruction's hash, so that two operations differing in one are never read as the same."""
    items = [f"{_KEY.sub('_', k)}={quote(unquote(v))}" for k, v in sorted((frontend or {}).items())]
    items += [f"{_KEY.sub('_', 'stablehlo.' + k)}={quote(v)}" for k, v in sorted(attrs.items())]
    return "frontend_attributes={" + ", ".join(items) + "}" if items else ""


def unquote(s: str) -> str:
    s = s.strip()
    if s.startswith('"') and s.endswith('"'):
        return s[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return s


def quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
