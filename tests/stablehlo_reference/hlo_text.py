"""A StableHLO module printed as HLO text, with the user's line for each line of it (the
compiled reader reads that text into the IR and names the user's lines: rust/src/parse/line_map.rs).
The module header: `replica_count`, `num_partitions`, donation (`tf.aliasing_output` ->
`input_output_alias`, `jax.buffer_donor` -> `buffer_donor`), Shardy's meshes (`xla.sdy.meshes`)."""

from __future__ import annotations

from tests.stablehlo_reference.emit import (
    Emitter,
    TranslateError,
    attr_dict,
    carry,
    parse_signature,
    sanitize,
)
from tests.stablehlo_reference.ops import translate
from tests.stablehlo_reference.shardy_meshes import Meshes
from tests.stablehlo_reference.structure import Func, MlirModule

__all__ = ["to_hlo_text"]

_MODULE_READ = frozenset({"mhlo.num_replicas", "mhlo.num_partitions", "mhlo.input_output_alias"})


def to_hlo_text(module: MlirModule) -> tuple[str, list[int]]:
    """The HLO text of `module` and, for each of its lines (index 1 on), the user's line."""
    em = Emitter(module, translate)
    entry = _entry(module)
    for f in module.funcs:
        if f.name != entry.name:
            em.func(f.name, f.line)
    em.func(entry.name, entry.line)
    em.comps[-1].entry = True
    header = _header(module, entry, em.meshes)
    lines = [f"HloModule {sanitize(module.name or 'module')}" + "".join(f", {k}={v}" for k, v in header), ""]
    where = [0, module.line, module.line]
    for comp in em.comps:
        lines.append(("ENTRY " if comp.entry else "") + comp.name + " {")
        where.append(comp.line)
        for i in comp.insts:
            operands = ", ".join(i.operands)
            call = i.opcode if i.opcode.endswith(")") else f"{i.opcode}({operands})"
            text = f"  {'ROOT ' if i.root else ''}{i.name} = {i.shape} {call}"
            lines.append(text + "".join(", " + a for a in i.attrs))
            where.append(i.line)
        lines += ["}", ""]
        where += [comp.line, comp.line]
    return "\n".join(lines), where


def _entry(module: MlirModule) -> Func:
    if not module.funcs:
        raise TranslateError("the module has no function", module.line)
    for f in module.funcs:
        if f.name == "main":
            return f
    public = [f for f in module.funcs if f.visibility == "public"]
    if len(public) == 1:
        return public[0]
    raise TranslateError("no @main and not one public function: which is the entry?", module.line)


def _header(module: MlirModule, entry: Func, meshes: Meshes) -> list[tuple[str, str]]:
    attrs = attr_dict(module.attributes) if module.attributes else {}
    out = []
    args, results = parse_signature(entry)
    aliases = []
    donors = []
    for number, (_, _, a) in enumerate(args):
        if "tf.aliasing_output" in a:
            k = a["tf.aliasing_output"].split(":")[0].strip()
            index = "{}" if len(results) == 1 else "{" + k + "}"
            aliases.append(f"{index}: ({number}, {{}}, may-alias)")
        elif a.get("jax.buffer_donor") == "true":
            donors.append(f"({number}, {{}})")
    if aliases:
        out.append(("input_output_alias", "{ " + ", ".join(aliases) + " }"))
    if donors:
        out.append(("buffer_donor", "{ " + ", ".join(donors) + " }"))
    for key, hlo in (("mhlo.num_replicas", "replica_count"), ("mhlo.num_partitions", "num_partitions")):
        if key in attrs:
            count = attrs[key].split(":")[0].strip()
            if not count.isdigit():
                raise TranslateError(
                    f"module attribute {key} = {attrs[key][:40]} is not a count", module.line
                )
            n = int(count)
            if n != 1:
                out.append((hlo, str(n)))
    if attrs.get("mhlo.input_output_alias", "[]") != "[]":
        raise TranslateError("mhlo.input_output_alias (torch_xla's donation) is not read yet", module.line)
    # The others (torch_xla's mhlo.is_dynamic, mhlo.cross_program_prefetches, ...) are kept in
    # the header, which diff does not compare: none changes what the module computes.
    rest = carry({k: v for k, v in attrs.items() if k not in _MODULE_READ})
    rest = rest.removeprefix("frontend_attributes=")
    if meshes.kept:  # Shardy's meshes, as XLA's export keeps them (`xla.sdy.meshes`)
        entry_ = "xla.sdy.meshes=" + meshes.attribute()
        rest = "{" + entry_ + (", " + rest[1:] if rest else "}")
    if rest:
        out.append(("frontend_attributes", rest))
    return out
