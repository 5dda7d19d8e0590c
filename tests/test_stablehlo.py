"""StableHLO text read into the IR the HLO reader builds (issue 38), held to what JAX wrote.

Every input is real: fixtures/jax/stablehlo/ (generate.py lowers each program once and writes
that lowering as StableHLO and as HLO), tests/data and fixtures/torch_xla (torch_xla's
XLA_SAVE_TENSORS_FMT=stablehlo). jaxlib's MLIR parser is the reference for the text's structure
(tests only: the reader never imports it). Broken inputs are made in tmp_path by cutting real
files, marked where it happens.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from xlagraph.cli.main import xlagraph

from tests.stablehlo_reference.structure import Op, read_structure
from xlagraph.diff import diff_modules
from xlagraph.ir import Module
from xlagraph.parse.sources import load_module

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "fixtures" / "jax" / "stablehlo"
MANIFEST = json.loads((HERE / "MANIFEST.json").read_text())
PROGRAMS = sorted(MANIFEST["programs"])
# Programs whose chlo operations XLA expands and the reader writes as one custom call each: not
# the export's instructions there (test_chlo_as_custom_calls holds them to the MLIR instead).
EXPORTED = [p for p in PROGRAMS if not MANIFEST["programs"][p].get("chlo")]
SHARDY = [p for p in PROGRAMS if MANIFEST["programs"][p].get("shardy")]
PAIRS = sorted(MANIFEST["pairs"])
SCRIPT = "fixtures/jax/stablehlo/generate.py"

# Where XLA's export (mhlo_to_hlo) and this reader write the same program differently, by design:
# the export folds what is computed from constants alone into one constant and shares equal
# constants; it writes a broadcast that only adds size-1 dimensions, and each sharded result, with
# a reshape; and it extracts every result of a tuple, where the reader extracts those used.
EXPORT_REWRITES = frozenset({"constant", "broadcast", "reshape", "get-tuple-element"})


def run(*args: str) -> Result:
    return CliRunner().invoke(xlagraph, list(args))


def one_error_line(result: Result, *must_contain: str) -> str:
    """Exit 2, nothing on stdout, one `xlagraph: error:` line, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlagraph: error: "), result.stderr
    assert "Traceback" not in result.output
    for text in must_contain:
        assert text in lines[0], lines[0]
    return lines[0]


def called(module: Module) -> list[object]:
    """The entry and the computations an instruction calls: XLA's export writes a composite's
    decomposition a second time, called by nothing (`composite.hlo`)."""
    names = {c for comp in module.computations for inst in comp.instructions for c in inst.called}
    return [comp for comp in module.computations if comp.is_entry or comp.name in names]


def counts(module: Module) -> Counter[str]:
    """Instructions per opcode, less those computed from constants alone (the export folds them)."""
    out: Counter[str] = Counter()
    for comp in called(module):
        from_constants: set[str] = set()
        for inst in comp.instructions:
            if inst.opcode == "constant" or (
                inst.operands and not inst.called and all(o in from_constants for o in inst.operands)
            ):
                from_constants.add(inst.name)
                continue
            out[inst.opcode] += 1
    return out


@pytest.mark.parametrize("name", EXPORTED)
def test_same_instructions_as_xla_export(name: str) -> None:
    """The reader's module has the computations and, opcode by opcode, the instructions XLA's own
    export of the same lowering has, but for the export's documented rewrites."""
    ours = load_module(str(HERE / f"{name}.mlir"))
    xla = load_module(str(HERE / f"{name}.hlo"))
    assert ours.format == "stablehlo"
    assert len(ours.computations) == len(called(ours)) == len(called(xla))
    a, b = counts(ours), counts(xla)
    differ = {op: (a[op], b[op]) for op in set(a) | set(b) if a[op] != b[op] and op not in EXPORT_REWRITES}
    assert not differ, differ
    assert {op for op in b if b[op]} <= {op for op in a if a[op]} | {"reshape", "broadcast"}


# Attributes that name computations or carry metadata: compared elsewhere or not at all.
_NOT_COMPARED = frozenset(
    {"metadata", "to_apply", "condition", "body", "branch_computations", "true_computation",
     "false_computation", "calls", "called_computations", "frontend_attributes", "select", "scatter"}
)  # fmt: skip
_LAYOUT = re.compile(r"\{[0-9,]*\}")


def signatures(module: Module) -> Counter[tuple[str, str, tuple[tuple[str, str], ...]]]:
    """(opcode, shape without layout, attributes) of each instruction `counts` counts, less the
    export's rewrites: a `while` of loop-invariant values it moves last (its tuple is compared as
    a set of shapes) and an iota it writes smaller and broadcasts (compared by opcode)."""
    out: Counter[tuple[str, str, tuple[tuple[str, str], ...]]] = Counter()
    for comp in called(module):
        from_constants: set[str] = set()
        for inst in comp.instructions:
            if inst.opcode == "constant" or (
                inst.operands and not inst.called and all(o in from_constants for o in inst.operands)
            ):
                from_constants.add(inst.name)
                continue
            if inst.opcode in EXPORT_REWRITES | {"parameter", "tuple"}:
                continue
            shape = _LAYOUT.sub("", inst.shape)
            attrs = tuple(sorted((k, v) for k, v in inst.attributes if k not in _NOT_COMPARED))
            if inst.opcode == "while":
                shape = ",".join(sorted(shape.strip("()").split(", ")))
            if inst.opcode == "iota":
                shape, attrs = "", ()
            out[(inst.opcode, shape, attrs)] += 1
    return out


@pytest.mark.parametrize("name", EXPORTED)
def test_same_attributes_as_xla_export(name: str) -> None:
    """Instruction by instruction, the shapes and attributes XLA's export writes (dimensions,
    windows, dimension numbers, replica groups, shardings, ...)."""
    ours = signatures(load_module(str(HERE / f"{name}.mlir")))
    xla = signatures(load_module(str(HERE / f"{name}.hlo")))
    differ = {k: (ours[k], xla[k]) for k in set(ours) | set(xla) if ours[k] != xla[k]}
    assert not differ, differ


def _reference_counts(text: str) -> Counter[str]:
    """Operations per name as jaxlib's MLIR parser reads the text."""
    pytest.importorskip("jaxlib")
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    with jax_mlir.make_ir_context():
        module = ir.Module.parse(text)
    out: Counter[str] = Counter()

    def walk(op: object) -> None:
        for region in op.regions:  # type: ignore[attr-defined]
            for block in region.blocks:
                for inner in block.operations:
                    out[inner.operation.name] += 1
                    walk(inner.operation)

    walk(module.operation)
    return out


_SPELLED = {"return": "func.return", "call": "func.call"}


def _structure_counts(ops: list[Op]) -> Counter[str]:
    out: Counter[str] = Counter()
    for op in ops:
        out[_SPELLED.get(op.name, op.name)] += 1
        if " applies " in f" {op.text}":  # `applies stablehlo.add`: a region of that op and a return
            out[op.text.split(" applies ")[1].split()[0]] += 1
            out["stablehlo.return"] += 1
        for region in op.regions:
            out += _structure_counts(region.ops)
    return out


@pytest.mark.parametrize("name", PROGRAMS)
def test_structure_matches_mlir(name: str) -> None:
    """Functions, operations and regions as jaxlib's MLIR parser finds them."""
    text = (HERE / f"{name}.mlir").read_text()
    module = read_structure(text)
    ours: Counter[str] = Counter({"func.func": len(module.funcs)})
    if module.meshes:
        ours["sdy.mesh"] = len(module.meshes)
    for f in module.funcs:
        ours += _structure_counts(f.body.ops)
    assert ours == _reference_counts(text)


@pytest.mark.parametrize("name", PROGRAMS)
def test_lines_are_the_users(name: str) -> None:
    """Each instruction names the line of the .mlir file its operation (or function) is on."""
    path = HERE / f"{name}.mlir"
    lines = path.read_text().split("\n")
    module = load_module(str(path))
    for comp in module.computations:
        assert 0 < comp.line <= len(lines)
        for inst in comp.instructions:
            text = lines[inst.line - 1].strip()
            assert text and not text.startswith("#loc"), (inst, text)


def test_source_lines_from_locations() -> None:
    """`loc(...)` through the `#loc` table: the dots of `mlp` cite the lines of `x @ w1`, `h @ w2`."""
    module = load_module(str(HERE / "mlp.mlir"))
    script = (ROOT / SCRIPT).read_text().split("\n")
    dots = [i for c in module.computations for i in c.instructions if i.opcode == "dot"]
    assert len(dots) == 2
    for dot, operand in zip(dots, ("@ w1", "@ w2"), strict=True):
        assert dot.metadata is not None and dot.metadata.source_file == SCRIPT
        assert operand in script[dot.metadata.source_line - 1]
        assert dot.metadata.op_name == "jit(mlp)/dot_general"


def test_torch_xla_pretty_locations() -> None:
    """torch_xla's XLA_SAVE_TENSORS_FMT=stablehlo writes MLIR's pretty debug form (no `loc(`,
    call sites over several lines): op names and source files are read from it all the same."""
    module = load_module(str(ROOT / "fixtures/torch_xla/formats/stablehlo_save_stablehlo.txt#0"))
    meta = [i.metadata for c in module.computations for i in c.instructions if i.metadata]
    assert any(m.op_name == "aten__addmm" and m.source_file.endswith(".py") and m.source_line for m in meta)


def test_sharding_and_donation() -> None:
    """mhlo.sharding on arguments, results and custom calls, and donation, as XLA's export."""
    ours = load_module(str(HERE / "sharding.mlir"))
    xla = load_module(str(HERE / "sharding.hlo"))

    def shardings(m: Module) -> list[tuple[str, str]]:
        entry = m.computations[-1]
        found = []
        for inst in entry.instructions:
            attrs = dict(inst.attributes)
            if "sharding" in attrs and (inst.opcode in ("parameter", "custom-call") or inst.is_root):
                found.append((inst.opcode, attrs["sharding"]))
        return sorted(found)

    assert shardings(ours) == shardings(xla)
    assert dict(ours.header)["input_output_alias"] == dict(xla.header)["input_output_alias"]


@pytest.mark.parametrize("pair", PAIRS)
def test_pairs_name_the_same_causes_as_hlo(pair: str) -> None:
    """A diff of two programs' StableHLO names the cause kinds the diff of their HLO names."""
    spec = MANIFEST["pairs"][pair]

    def kinds(ext: str) -> set[str]:
        a = load_module(str(HERE / f"{spec['a']}.{ext}"))
        b = load_module(str(HERE / f"{spec['b']}.{ext}"))
        result = diff_modules(a, b)
        assert result.verdict != "identical"
        return {str(c.kind) for c in result.causes}

    assert kinds("mlir") == kinds("hlo") == {spec["cause"]}


def test_cli_diff_and_graphs() -> None:
    a, b = HERE / "pairs/constant_a.mlir", HERE / "pairs/constant_b.mlir"
    result = run("diff", str(a), str(b))
    assert result.exit_code == 1 and "constant" in result.stdout, result.output
    same = run("diff", str(a), str(a))
    assert same.exit_code == 0 and same.stdout.startswith("identical"), same.output
    listing = run("graphs", str(HERE / "scan.mlir"))
    assert listing.exit_code == 0 and "jit_scan" in listing.stdout, listing.output


@pytest.mark.parametrize(("name", "expected"), sorted(MANIFEST["refused"].items()))
def test_refused_in_one_line(name: str, expected: str) -> None:
    path = str(HERE / name)
    line = one_error_line(run("diff", path, path), path, expected)
    if name.endswith(".mlir"):
        assert f"{path}:" in line  # the line of the operation
    one_error_line(run("graphs", path), path, expected)


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.95])
def test_truncated_file(tmp_path: Path, keep: float) -> None:
    """A file cut short (here: a real one, cut by hand at a fraction of its length) is one line."""
    text = (HERE / "scan.mlir").read_text()
    module_end = text.index("\n} loc(#loc)")
    cut = tmp_path / "cut.mlir"
    cut.write_text(text[: int(module_end * keep)])
    one_error_line(run("diff", str(cut), str(HERE / "scan.mlir")), str(cut))
    one_error_line(run("graphs", str(cut)), str(cut))


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_cut_in_the_location_table(tmp_path: Path, keep: float) -> None:
    """A file cut inside the `#loc` table after the module (the graph whole, its locations not)
    is one line naming the line where the cut shows: a location alias cut short, or, cut at a
    line's end, a location an operation names that the table no longer defines (MLIR refuses
    both)."""
    text = (HERE / "scan.mlir").read_text()
    table = text.index("\n} loc(#loc)") + len("\n} loc(#loc)\n")
    at = table + int((len(text) - table) * keep)
    lines_kept = text[:at].rsplit("\n", 1)[0] + "\n"
    for k, cut in enumerate((text[:at], lines_kept)):
        if cut.endswith("\n") and k == 0:
            continue  # the fraction fell on a line's end: the second case covers it
        path = tmp_path / f"cut{k}.mlir"
        path.write_text(cut)
        line = one_error_line(run("graphs", str(path)), f"{path}:")
        assert "location" in line, line
        one_error_line(run("diff", str(path), str(HERE / "scan.mlir")), f"{path}:")


def test_reducer_of_an_unknown_dialect_is_refused(tmp_path: Path) -> None:
    """`applies foo.add` is not StableHLO's add: refused by name with its line, never read as one."""
    text = (HERE / "scan.mlir").read_text()
    assert "applies stablehlo.add" in text
    path = tmp_path / "foo.mlir"
    path.write_text(text.replace("applies stablehlo.add", "applies foo.add", 1))
    one_error_line(run("graphs", str(path)), f"{path}:", "foo.add")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # Hand edits of a real file: an operation attribute and an argument attribute that the
        # translation does not read.
        ("stablehlo.add %1, %2 :", "stablehlo.add %1, %2 {my.attr = 1 : i32} :"),
        ("%arg0: tensor<4xf32>", "%arg0: tensor<4xf32> {my.attr = 1 : i32}"),
    ],
)
def test_unread_attributes_are_never_identical(old: str, new: str) -> None:
    """An attribute the reader does not translate is carried into the instruction, so that two
    modules that differ only in it are never `identical`."""
    from xlagraph.parse.stablehlo import read_stablehlo

    text = (HERE / "pairs/constant_a.mlir").read_text()
    edited = text.replace(old, new, 1)
    assert edited != text
    result = diff_modules(read_stablehlo(text, "a.mlir"), read_stablehlo(edited, "b.mlir"))
    assert result.verdict != "identical"
    assert {str(c.kind) for c in result.causes} == {"attribute"}


def test_report_and_api() -> None:
    """`report` reads an XLA_SAVE_TENSORS_FMT=stablehlo dump; the API diffs .mlir files."""
    import xlagraph.api as api

    result = run("report", str(ROOT / "tests/data/train.stablehlo.txt"))
    assert result.exit_code == 0 and "no recompile" in result.stdout, result.output
    found = api.diff(str(HERE / "pairs/shape_a.mlir"), str(HERE / "pairs/shape_b.mlir"))
    assert [str(c.kind) for c in found.causes] == ["parameter_shape"]


# -- Shardy (sdy) ---------------------------------------------------------------------------------


def annotated(module: Module) -> Counter[tuple[str, str, str, str]]:
    """(opcode, custom-call target, sharding, frontend attributes) of every instruction with a
    sharding or frontend attributes, less the export's reshapes and tuple elements (a sharded
    result's `reshape`, the elements of an operation of several results)."""
    out: Counter[tuple[str, str, str, str]] = Counter()
    for comp in module.computations:
        for inst in comp.instructions:
            attrs = dict(inst.attributes)
            if inst.opcode in ("reshape", "get-tuple-element") and not inst.is_root:
                continue
            if "sharding" in attrs or "frontend_attributes" in attrs:
                key = (inst.opcode, attrs.get("custom_call_target", ""), attrs.get("sharding", ""))
                out[(*key, attrs.get("frontend_attributes", ""))] += 1
    return out


@pytest.mark.parametrize("name", SHARDY)
def test_shardy_shardings_as_xla_export(name: str) -> None:
    """Shardy's meshes, shardings and sharding constraints, instruction by instruction, as XLA's
    export writes them: the HLO sharding of the same devices, the Shardy text in
    `xla.sdy.sharding`, `Sharding` and `xla.sdy.FuncResultSharding` custom calls, the root's
    tuple sharding and the header's `xla.sdy.meshes`."""
    ours = load_module(str(HERE / f"{name}.mlir"))
    xla = load_module(str(HERE / f"{name}.hlo"))
    found = annotated(ours)
    assert found == annotated(xla)
    assert any(s.startswith("{devices=") for _, _, s, _ in found)
    assert dict(ours.header)["frontend_attributes"] == dict(xla.header)["frontend_attributes"]


def test_shardy_cli_names_the_sharding_as_for_hlo() -> None:
    """`xlagraph diff` of two lowerings that differ in one Shardy sharding names the cause in the
    words the diff of their HLO uses, and finds the same modules (the same fingerprints)."""
    spec = MANIFEST["pairs"]["shardy_sharding"]
    outputs = {}
    for ext in ("mlir", "hlo"):
        result = run("diff", str(HERE / f"{spec['a']}.{ext}"), str(HERE / f"{spec['b']}.{ext}"))
        assert result.exit_code == 1, result.output
        lines = result.stdout.splitlines()
        outputs[ext] = (
            [line for line in lines if line.startswith("sharding:")],
            re.findall(r"fingerprint (\w+)", result.stdout),
        )
    assert outputs["mlir"] == outputs["hlo"]
    (cause,) = outputs["mlir"][0]
    assert "{devices=[4,1]<=[4]} -> {devices=[1,4]<=[4]}" in cause


def test_shardy_open_dimension_is_never_identical() -> None:
    """A dimension left open to propagation (`{?}`) has no HLO sharding of its own: the Shardy
    text kept in `xla.sdy.sharding` tells the two apart, as in XLA's HLO (a hand edit of a real
    file)."""
    from xlagraph.parse.stablehlo import read_stablehlo

    text = (HERE / "shardy_1d.mlir").read_text()
    old = '%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"d"}, {}]>'
    edited = text.replace(old, old.replace("{}]>", "{?}]>"), 1)
    assert edited != text
    a, b = read_stablehlo(text, "a.mlir"), read_stablehlo(edited, "b.mlir")
    assert dict(a.computations[-1].instructions[0].attributes)["sharding"] == "{devices=[4,1]<=[4]}"
    result = diff_modules(a, b)
    assert result.verdict != "identical"
    assert {str(c.kind) for c in result.causes} == {"sharding"}


def _random_sharding(rng: random.Random, axes: list[tuple[str, int]], rank: int) -> str:
    """A valid Shardy sharding of `axes`: each axis whole or cut in two sub-axes, each piece on a
    dimension, replicated, unreduced or left implicit; some dimensions open."""
    pieces = []
    for name, size in axes:
        if size >= 4 and rng.random() < 0.4:
            cut = rng.choice([k for k in (2, 4) if k < size])
            pieces += [f'"{name}":(1){cut}', f'"{name}":({cut}){size // cut}']
        else:
            pieces.append(f'"{name}"')
    rng.shuffle(pieces)
    dims: list[list[str]] = [[] for _ in range(rank)]
    replicated, unreduced = [], []
    for piece in pieces:
        r = rng.random()
        if r < 0.55:
            dims[rng.randrange(rank)].append(piece)
        elif r < 0.7:
            replicated.append(piece)
        elif r < 0.8:
            unreduced.append(piece)
    order = [name for name, _ in axes]

    def mesh_order(piece: str) -> tuple[int, int]:
        m = re.match(r'"(\w+)"(?::\((\d+)\))?', piece)
        assert m is not None
        return order.index(m.group(1)), int(m.group(2) or 0)

    opened = [[*d, "?"] if rng.random() < 0.2 else d for d in dims]
    text = "@mesh, [" + ", ".join("{" + ", ".join(d) + "}" for d in opened) + "]"
    if replicated:
        text += ", replicated={" + ", ".join(sorted(replicated, key=mesh_order)) + "}"
    if unreduced:
        text += ", unreduced={" + ", ".join(sorted(unreduced, key=mesh_order)) + "}"
    return text


def _xla_hlo(text: str) -> str | None:
    """XLA's HLO of a StableHLO module (jaxlib's conversion, the path of `Lowered.as_text(
    dialect="hlo")`); None where Shardy's verifier refuses the module."""
    from jax._src.lib import _jax
    from jax._src.lib import hlo as hlo_lib

    try:
        computation = _jax.mlir.mlir_module_to_xla_computation(text, use_tuple_args=False)
    except Exception:
        return None
    return computation.as_hlo_module().to_string(hlo_lib.HloPrintOptions.short_parsable())


_MESHES = [[("x", 2), ("y", 4)], [("a", 8)], [("a", 2), ("b", 2), ("c", 2)], [("x", 1), ("y", 8)],
           [("p", 2), ("q", 1), ("r", 4)], [("_f", 8)], [("m", 4), ("n", 2)]]  # fmt: skip


def _device_ids(rng: random.Random) -> str:
    ids = list(range(8))
    if rng.random() < 0.3:
        rng.shuffle(ids)
    return ", device_ids=[" + ", ".join(map(str, ids)) + "]" if ids != sorted(ids) else ""


def test_shardy_conversion_matches_xla() -> None:
    """The HLO sharding of each Shardy sharding is the one XLA's own conversion writes (jaxlib's
    StableHLO -> HLO, the path of `Lowered.as_text(dialect="hlo")`), on generated shardings of
    meshes of 1 to 3 axes (size-1 axes included), sub-axes, replicated and unreduced axes, open
    dimensions and device orders (`device_ids`): the fixtures' JAX programs cannot reach them all.
    The MLIR text is generated here; the reference is XLA."""
    pytest.importorskip("jaxlib")
    from tests.stablehlo_reference.shardy import hlo_sharding, parse_mesh, parse_sharding

    rng = random.Random(38)
    compared = 0
    for _ in range(40):
        axes = rng.choice(_MESHES)
        mesh_text = "<[" + ", ".join(f'"{n}"={s}' for n, s in axes) + "]" + _device_ids(rng) + ">"
        ranks = [rng.choice([1, 2, 3]) for _ in range(6)]
        shardings = [_random_sharding(rng, axes, rank) for rank in ranks]
        args = ", ".join(
            f"%arg{k}: tensor<{'8x' * rank}f32> {{sdy.sharding = #sdy.sharding<{s}>}}"
            for k, (rank, s) in enumerate(zip(ranks, shardings, strict=True))
        )
        text = (
            "module @m attributes {mhlo.num_partitions = 8 : i32} {\n"
            f"  sdy.mesh @mesh = {mesh_text}\n"
            f"  func.func public @main({args}) {{\n    return\n  }}\n}}\n"
        )
        hlo = _xla_hlo(text)
        if hlo is None:  # a sharding Shardy's verifier refuses: no reference
            continue
        xla = dict(re.findall(r"parameter\((\d+)\), sharding=(\{.*?\}), frontend", hlo))
        mesh = parse_mesh("mesh", mesh_text)
        for k, s in enumerate(shardings):
            ours = hlo_sharding(parse_sharding(f"#sdy.sharding<{s}>"), {"mesh": mesh})
            assert ours == xla[str(k)], (mesh_text, s)
            compared += 1
    assert compared > 150


def test_shardy_merged_meshes_match_xla() -> None:
    """Meshes of the same devices, merged as XLA's export merges them (the axes of the others'
    shardings renamed onto the main mesh's, sub-axes merged): on generated modules of two or
    three meshes (`device_ids`, size-1 axes, a mesh of `_` axes), every sharding, frontend
    attribute and the header's `xla.sdy.meshes` are XLA's. The MLIR text is generated here; the
    reference is XLA."""
    pytest.importorskip("jaxlib")
    from xlagraph.parse.hlo import parse_hlo
    from xlagraph.parse.stablehlo import read_stablehlo

    rng = random.Random(3838)
    compared = 0
    for _ in range(40):
        chosen = rng.sample(_MESHES, rng.choice([2, 3]))
        ids = _device_ids(rng)
        lines = [
            f"  sdy.mesh @mesh{i} = <[" + ", ".join(f'"{n}"={s}' for n, s in axes) + "]"
            + (ids if rng.random() < 0.7 else "") + ">"
            for i, axes in enumerate(chosen)
        ]  # fmt: skip
        specs = []
        for _ in range(6):
            i = rng.randrange(len(chosen))
            specs.append(_random_sharding(rng, chosen[i], 2).replace("@mesh", f"@mesh{i}"))
        args = ", ".join(
            f"%arg{k}: tensor<8x8xf32> {{sdy.sharding = #sdy.sharding<{s}>}}" for k, s in enumerate(specs)
        )
        text = (
            "module @m attributes {mhlo.num_partitions = 8 : i32} {\n" + "\n".join(lines) + "\n"
            f"  func.func public @main({args}) -> "
            f"(tensor<8x8xf32> {{sdy.sharding = #sdy.sharding<{specs[0]}>}}) {{\n"
            f"    %0 = sdy.sharding_constraint %arg1 <{specs[1]}> : tensor<8x8xf32>\n"
            "    %1 = stablehlo.add %0, %arg0 : tensor<8x8xf32>\n    return %1 : tensor<8x8xf32>\n  }\n}\n"
        )
        hlo = _xla_hlo(text)
        if hlo is None:
            continue
        ours, xla = read_stablehlo(text, "generated.mlir"), parse_hlo(hlo, "generated.hlo")
        assert annotated(ours) == annotated(xla), text
        assert dict(ours.header)["frontend_attributes"] == dict(xla.header)["frontend_attributes"], text
        compared += 1
    assert compared > 15


# -- chlo -----------------------------------------------------------------------------------------


def test_chlo_as_custom_calls() -> None:
    """Each chlo operation XLA expands is one custom call named for it (as many of each as
    jaxlib's MLIR parser finds), and the program is `identical` to itself."""
    path = HERE / "chlo_special.mlir"
    module = load_module(str(path))
    targets = Counter(
        dict(i.attributes)["custom_call_target"].strip('"')
        for c in module.computations
        for i in c.instructions
        if i.opcode == "custom-call"
    )
    expected = {k: n for k, n in _reference_counts(path.read_text()).items() if k.startswith("chlo.")}
    assert len(expected) >= 10
    assert targets == expected
    same = run("diff", str(path), str(path))
    assert same.exit_code == 0 and same.stdout.startswith("identical"), same.output


def test_chlo_pair_is_never_identical() -> None:
    """Two programs that differ only in one expanded chlo operation differ in that instruction."""
    spec = MANIFEST["chlo_pairs"]["chlo"]
    a = load_module(str(HERE / f"{spec['a']}.mlir"))
    b = load_module(str(HERE / f"{spec['b']}.mlir"))
    result = diff_modules(a, b)
    assert result.verdict != "identical"
    changes = [ch for c in result.causes for ch in c.changes]
    assert [(ch.what, ch.old, ch.new) for ch in changes] == [
        ("custom_call_target", f'"{spec["ops"][0]}"', f'"{spec["ops"][1]}"')
    ]


def test_chlo_with_attributes_is_refused(tmp_path: Path) -> None:
    """A chlo operation with attributes of its own (`broadcast_*`) is refused by name and line
    (a hand edit of a real file: JAX does not write them)."""
    text = (HERE / "pairs/chlo_a.mlir").read_text()
    edited = text.replace(
        "chlo.erf_inv %arg0 : tensor<4xf32> -> tensor<4xf32>",
        "chlo.broadcast_add %arg0, %arg0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>",
    )
    assert edited != text
    path = tmp_path / "broadcast.mlir"
    path.write_text(edited)
    line = one_error_line(run("graphs", str(path)), "chlo.broadcast_add")
    assert f"{path}:" in line
