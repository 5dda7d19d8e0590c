"""The canonicalization engine (the compiled core, rust/src/canon/) gives exactly the oracle's
answers (`tests/canonical_reference.py`, one plain walk per rule) on every real module in
fixtures/: every field of every computation (order, operands, hashes, numbering, names, dead
code, layouts) and the module fingerprint and order. Both ways into the core are checked: the
canonical form `_core.parse_hlo` makes while reading, and `_core.canonicalize_ir` on the Python IR
(lazy IR, protos, modules built by hand: here every module again, without its reader's form).
Modules a reader refuses are skipped; an instruction that canonicalization refuses must be
refused by all with the same message."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from tests import canonical_reference as reference
from xlagraph.canonical import CanonicalModule, canonicalize
from xlagraph.errors import ParseError, XlagraphError
from xlagraph.ir import Computation, Instruction, Module
from xlagraph.parse.sources import open_source, read

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
_FIELDS = (
    "order",
    "operands",
    "outputs",
    "keys",
    "h0",
    "h1",
    "param_number",
    "param_rank",
    "walk",
    "plumbing",
    "dead",
    "hash",
    "layouts",
)


def _sources() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".hlo", ".txt"))


def _modules(path: Path) -> list[Module]:
    try:
        source = open_source(str(path))
    except XlagraphError:
        return []
    out = []
    for graph in source.graphs:
        try:
            out.append(read(graph))
        except XlagraphError:
            continue
    return out


def _same(fast: CanonicalModule, ref: CanonicalModule) -> None:
    assert (fast.fingerprint, fast.order) == (ref.fingerprint, ref.order)
    assert list(fast.computations) == list(ref.computations)
    for name, f in fast.computations.items():
        r = ref.computations[name]
        # Every computation the core canonicalizes has its handle: the library reads no other way.
        assert f.core is not None, f"{name}: no core handle"
        for field in _FIELDS:
            fv, rv = getattr(f, field), getattr(r, field)
            assert fv == rv, f"{name}.{field}"
            if isinstance(fv, Mapping):  # dictionaries, or mappings over the core's handle
                assert list(fv) == list(rv), f"{name}.{field}: key order"


def _canonical(canonicalize, module: Module) -> CanonicalModule | str:  # type: ignore[no-untyped-def]
    try:
        return canonicalize(module)
    except XlagraphError as e:
        return str(e)


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_core_canonicalization_equals_reference(path: Path) -> None:
    for module in _modules(path):
        fast = _canonical(canonicalize, module)
        python = _canonical(canonicalize, replace(module, core=None))
        ref = _canonical(reference.canonicalize, module)
        if isinstance(ref, str) or isinstance(fast, str) or isinstance(python, str):
            assert fast == python == ref
            continue
        _same(fast, ref)
        _same(python, ref)


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_summary_equals_parse_and_canonicalize(path: Path) -> None:
    """`summarize_hlo` (no IR built) says what parsing and canonicalizing the module say."""
    from xlagraph.parse.hlo import parse_hlo, summarize_hlo

    try:
        source = open_source(str(path))
    except XlagraphError:
        return
    for graph in source.graphs:
        if graph.format != "hlo":
            continue
        args = (graph.text, graph.path)
        try:
            module = parse_hlo(*args, first_line=graph.first_line)
        except XlagraphError as e:
            with pytest.raises(XlagraphError) as caught:
                summarize_hlo(*args, first_line=graph.first_line)
            assert str(caught.value) == str(e)
            continue
        full = _canonical(canonicalize, module)
        try:
            quick = summarize_hlo(*args, first_line=graph.first_line)
        except XlagraphError as e:
            assert str(e) == full
            continue
        assert quick is not None  # the core takes every module it reads
        assert not isinstance(full, str)
        assert quick[:5] == (
            module.name,
            module.instruction_count,
            len(module.computations),
            full.fingerprint,
            full.order,
        )
        assert quick.notes == module.notes


def test_compiled_core_canonicalizes_parsed_modules() -> None:
    """The reader's modules come canonicalized (`canonicalize` only wraps that form)."""
    from xlagraph.parse.hlo import parse_hlo

    module = parse_hlo((FIXTURES / "torch_xla" / "ragged_batch" / "a.hlo").read_text())
    assert module.core is not None and module.core[1] is not None


def test_fingerprint_is_the_same_in_every_process() -> None:
    """A tuple-rooted module with non-default layouts: the strings inside a computation's hash
    (its tuple skeleton, its layouts) must not enter through `hash(str)`, which every process
    seeds differently."""
    path = FIXTURES / "torch_xla" / "ragged_batch" / "a.hlo"
    code = (
        "import sys, dataclasses\n"
        "from xlagraph.canonical import canonicalize\n"
        "from xlagraph.parse.hlo import parse_hlo\n"
        "m = parse_hlo(open(sys.argv[1]).read())\n"
        "for module in (m, dataclasses.replace(m, core=None)):\n"
        "    c = canonicalize(module)\n"
        "    print(c.fingerprint, c.order)\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code, str(path)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    (out,) = outputs
    assert len(set(out.splitlines())) == 1


def test_fixtures_are_found() -> None:
    assert len(_sources()) > 100


def test_cached_keys_keep_callees_apart() -> None:
    """Hand-written (the key cache's edge case): two reduces printed alike but for the callee
    they apply must keep different keys; the cache must not hand the first one's to the second."""
    from xlagraph.parse.hlo import parse_hlo

    text = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}

ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  s = f32[] reduce(p, z), dimensions={0}, to_apply=add
  t = f32[] reduce(p, z), dimensions={0}, to_apply=max
  ROOT o = (f32[], f32[]) tuple(s, t)
}
"""
    module = parse_hlo(text, "cache_edge.hlo")
    fast, ref = canonicalize(module), reference.canonicalize(module)
    _same(fast, ref)
    _same(canonicalize(replace(module, core=None)), ref)
    assert fast.entry.keys["s"] != fast.entry.keys["t"]


def test_operand_cycle_refused_alike() -> None:
    """Built from IR types (the reader refuses cycles before canonicalization sees them)."""
    from xlagraph.ir import Computation, Instruction

    def ins(
        name: str, opcode: str, operands: tuple[str, ...], payload: str = "", root: bool = False
    ) -> Instruction:
        return Instruction(name, opcode, "f32[4]", operands, (), (), payload, None, root, 0)

    body = (
        ins("p", "parameter", (), "0"),
        ins("a", "add", ("p", "b")),
        ins("b", "negate", ("a",)),
        ins("r", "negate", ("a",), root=True),
    )
    module = Module("m", (Computation("e", body, is_entry=True),))
    fast, ref = _canonical(canonicalize, module), _canonical(reference.canonicalize, module)
    assert isinstance(fast, str) and "operand cycle" in fast
    assert fast == ref


def _protos() -> list[Path]:
    return sorted(FIXTURES.rglob("*.pb"))


@pytest.mark.parametrize("path", _protos(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_proto_modules_canonicalize_as_the_reference(path: Path) -> None:
    """A proto is read as the text XLA prints for it (parse/hlo_proto.py): its canonical form is
    the reader's, and the core's on its Python IR alike."""
    modules = _modules(path)
    assert modules
    for module in modules:
        ref = _canonical(reference.canonicalize, module)
        for fast in (_canonical(canonicalize, module), _canonical(canonicalize, replace(module, core=None))):
            if isinstance(fast, str) or isinstance(ref, str):
                assert fast == ref
                continue
            _same(fast, ref)


def _ins(
    name: str,
    opcode: str,
    operands: tuple[str, ...] = (),
    *,
    payload: str = "",
    shape: str = "f32[4]",
    attributes: tuple[tuple[str, str], ...] = (),
    called: tuple[str, ...] = (),
    root: bool = False,
    line: int = 0,
) -> Instruction:
    return Instruction(name, opcode, shape, operands, attributes, called, payload, None, root, line)


def _reducer(name: str, opcode: str) -> Computation:
    scalar = "f32[]"
    return Computation(
        name,
        (
            _ins("a", "parameter", payload="0", shape=scalar),
            _ins("b", "parameter", payload="1", shape=scalar),
            _ins("r", opcode, ("a", "b"), shape=scalar, root=True),
        ),
    )


def _entry(*body: Instruction) -> Computation:
    return Computation("e", body, is_entry=True, line=1)


# Modules where the rules ask Python (ints past 64 bits, `\w` and `isdigit` on non-ASCII text,
# computations sharing a name): the core gives Python's answer, field for field.
_PYTHON_ANSWERS = {
    "non-ASCII computation names": Module(
        "m",
        (
            _reducer("add\u00e9", "add"),
            _reducer("add", "maximum"),
            _entry(
                _ins("p", "parameter", payload="0"),
                _ins("z", "constant", payload="0", shape="f32[]"),
                _ins(
                    "s",
                    "reduce",
                    ("p", "z"),
                    shape="f32[]",
                    attributes=(("dimensions", "{0}"), ("to_apply", "%add\u00e9")),
                    called=("add\u00e9",),
                    root=True,
                ),
            ),
        ),
    ),
    "a get-tuple-element index in Arabic-Indic digits, and one past 64 bits": Module(
        "m",
        (
            _entry(
                _ins("p", "parameter", payload="0"),
                _ins("q", "parameter", payload=" 1 "),
                _ins("t", "tuple", ("p", "q"), shape="(f32[4], f32[4])"),
                _ins("g", "get-tuple-element", ("t",), attributes=(("index", "\u0661"),)),
                _ins("h", "get-tuple-element", ("t",), attributes=(("index", "99999999999999999999"),)),
                _ins("r", "add", ("g", "h"), root=True),
            ),
        ),
    ),
    "computations that share a name": Module(
        "m",
        (
            _reducer("_", "add"),
            _reducer("_", "multiply"),
            _entry(
                _ins("p", "parameter", payload="0"),
                _ins("z", "constant", payload="0", shape="f32[]"),
                _ins(
                    "s",
                    "reduce",
                    ("p", "z"),
                    shape="f32[]",
                    attributes=(("dimensions", "{0}"), ("to_apply", "_")),
                    called=("_",),
                    root=True,
                ),
            ),
        ),
    ),
    "iota replica groups past 64 bits": Module(
        "m",
        (
            _entry(
                _ins("p", "parameter", payload="0"),
                _ins(
                    "r",
                    "all-reduce",
                    ("p",),
                    attributes=(("replica_groups", "[2,99999999999999999999999]<=[4]"),),
                    root=True,
                    line=7,
                ),
            ),
        ),
    ),
}


@pytest.mark.parametrize("case", list(_PYTHON_ANSWERS))
def test_core_gives_pythons_answer(case: str) -> None:
    module = _PYTHON_ANSWERS[case]
    fast, ref = _canonical(canonicalize, module), _canonical(reference.canonicalize, module)
    if isinstance(fast, str) or isinstance(ref, str):
        assert fast == ref
        assert "99999999999999999999999" in fast
        return
    _same(fast, ref)


def test_what_python_could_not_take_is_an_error_naming_it() -> None:
    """Python's rules crashed on these (`int("²")`, an empty computation, an undefined operand)."""
    superscript = Module(
        "m",
        (
            _entry(
                _ins("p", "parameter", payload="0"),
                _ins("t", "tuple", ("p",), shape="(f32[4])"),
                _ins("g", "get-tuple-element", ("t",), attributes=(("index", "\u00b2"),), root=True, line=4),
            ),
        ),
    )
    empty = Module(
        "m", (Computation("c", (), line=3), _entry(_ins("p", "parameter", payload="0", root=True)))
    )
    undefined = Module("m", (_entry(_ins("r", "negate", ("nowhere",), root=True, line=2)),))
    wrong_number = Module("m", (_entry(_ins("p", "parameter", payload="one", root=True, line=2)),))
    for module, phrase, line in (
        (superscript, "get-tuple-element g has index", 4),
        (undefined, "operand nowhere of instruction r is not defined in computation e", 2),
        (wrong_number, 'parameter p has number "one"', 2),
    ):
        with pytest.raises(ParseError) as caught:
            canonicalize(module)
        assert phrase in str(caught.value) and caught.value.line == line
    with pytest.raises(ParseError, match="computation c has no instructions"):
        canonicalize(empty)
