"""XLA's HLO grammar and strictness in the compiled reader.

Every module here is hand-written (not a real dump): each one isolates one rule of XLA's parser
(xla/hlo/parser/hlo_parser.cc), the kind of text its own hlo_parser_test.cc feeds it. What XLA
accepts must read with XLA's instruction and computation counts; what XLA refuses must raise
ParseError naming the line.
"""

from __future__ import annotations

import threading

import pytest

from xlagraph.errors import ParseError
from xlagraph.parse.hlo import parse_hlo

NEGATE = "HloModule m\nENTRY e {\n  p = f32[3] parameter(0)\n  ROOT n = f32[3] negate(p)\n}\n"


def _counts(text: str) -> tuple[int, int]:
    module = parse_hlo(text, "t.hlo")
    return len(module.computations), module.instruction_count


OPERAND_SHAPES = (
    "HloModule m\nENTRY e {\n  p = f32[2,3]{1,0} parameter(0)\n"
    "  t = (f32[2,3]{1,0}, s32[]) tuple(f32[2,3]{1,0} p, s32[] constant(1))\n"
    "  g = f32[2,3]{1,0} get-tuple-element((f32[2,3]{1,0}, s32[]) t), index=0\n"
    "  ROOT a = f32[2,3]{0,1} add(f32[2,3]{0,1} g, f32[2,3] /*c*/ p)\n}\n"
)

# -- accepted, with XLA's counts ---------------------------------------------------------------

ACCEPTED = {
    "header and instructions over several lines": (
        "HloModule m,\n  entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n\nENTRY e {\n"
        "  p = f32[2]{0}\n      parameter(0)\n  ROOT n = f32[2]{0} negate(\n     p)\n}\n",
        (1, 2),
    ),
    "comments anywhere, also first": (
        "/* leading */ // and a line\nHloModule /*x*/ m\nENTRY /*y*/ e {\n"
        "  p = f32[3]/*z*/parameter(0)\n  ROOT n = f32[3] negate(/*index=0*/p) // trailing\n}\n",
        (1, 2),
    ),
    "no space between shape and opcode": (NEGATE.replace("] p", "]p").replace("] n", "]n"), (1, 2)),
    "byte order mark and CR line ends": ("\ufeff" + NEGATE.replace("\n", "\r"), (1, 2)),
    "CRLF line ends": (NEGATE.replace("\n", "\r\n"), (1, 2)),
    "result shape left out": (NEGATE.replace("ROOT n = f32[3] negate", "ROOT n = negate"), (1, 2)),
    "nested instructions": (
        "HloModule m\nENTRY e {\n  x = f32[10] parameter(0)\n"
        "  ROOT a = f32[10] add(negate(x), f32[10] multiply(f32[10] x, f32[10] parameter(1)))\n}\n",
        (1, 5),
    ),
    "async shorthand with its wrapped computation": (
        "HloModule m\nENTRY e {\n  p0 = f32[10] parameter(0)\n  p1 = f32[10] parameter(1)\n"
        "  s = ((f32[10], f32[10]), f32[10], u32[]) add-start(p0, p1)\n"
        "  u = ((f32[10], f32[10]), f32[10], u32[]) add-update(s)\n"
        "  ROOT d = f32[10] add-done(u)\n}\n",
        (2, 8),
    ),
    "custom-call-start": (
        "HloModule m\nENTRY e {\n  p0 = f32[10] parameter(0)\n"
        '  s = ((f32[10]), f32[10], u32[]) custom-call-start(p0), custom_call_target="foo"\n'
        "  ROOT d = f32[10] custom-call-done(s)\n}\n",
        (2, 5),
    ),
    "async-start calling a computation": (
        "HloModule m\nw {\n  a = f32[10] parameter(0)\n  ROOT n = f32[10] negate(a)\n}\n"
        "ENTRY e {\n  p0 = f32[10] parameter(0)\n"
        "  s = ((f32[10]), f32[10], u32[]) async-start(p0), calls=w\n"
        "  ROOT d = f32[10] async-done(s), calls=w\n}\n",
        (2, 5),
    ),
    "computations written in place": (
        "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply={\n"
        "    x = f32[] parameter(0)\n    ROOT r = f32[] call(x), to_apply={\n"
        "      y = f32[] parameter(0)\n      ROOT n = f32[] negate(y)\n    }\n  }\n}\n",
        (3, 6),
    ),
    "computations without a module header": (NEGATE.replace("HloModule m\n", ""), (1, 2)),
    "one instruction alone, its operands made parameters": (
        "%multiply = f32[2,4]{1,0} multiply(f32[2,4]{1,0} %broadcast, f32[2,4]{1,0} %x)\n",
        (1, 3),
    ),
    # The reader measures an operand's shape written as its definition wrote it without parsing
    # it again; another layout, a comment or a tuple take the general path.
    "operand shapes as defined, with another layout, a comment, a tuple": (
        OPERAND_SHAPES,
        (1, 5),
    ),
    "constants: elided, nested, special values": (
        "HloModule m\nENTRY e {\n  a = f32[2,2] constant({...})\n"
        "  b = s8[2,2] constant({{-128, 127}, {0, 1}})\n"
        "  c = f32[3] constant({inf, -inf, nan})\n  d = pred[2] constant({true, false})\n"
        "  f = c64[] constant((1, -2.5))\n  ROOT t = (f32[2,2], s8[2,2]) tuple(a, b)\n}\n",
        (1, 6),
    ),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_xla_grammar_is_read_with_xlas_counts(case: str) -> None:
    text, counts = ACCEPTED[case]
    assert _counts(text) == counts


def test_nested_instructions_get_xlas_names_and_come_first() -> None:
    text = ACCEPTED["nested instructions"][0]
    entry = parse_hlo(text).entry
    assert [i.name for i in entry.instructions] == [
        "x",
        "negate.anon",
        "parameter.anon",
        "multiply.anon",
        "a",
    ]
    assert entry.root.operands == ("negate.anon", "multiply.anon")
    assert entry.by_name["negate.anon"].shape == ""  # left out: XLA infers it, xlagraph does not


def test_async_shorthand_calls_the_wrapped_computation() -> None:
    module = parse_hlo(ACCEPTED["async shorthand with its wrapped computation"][0])
    start = module.entry.by_name["s"]
    (wrapped,) = start.called
    computation = module.by_name[wrapped]
    assert [i.opcode for i in computation.instructions] == ["parameter", "parameter", "add"]
    assert computation.root.shape == "f32[10]"


def test_lines_count_every_line_ending() -> None:
    for newline in ("\n", "\r\n", "\r"):
        module = parse_hlo(NEGATE.replace("\n", newline))
        assert module.entry.root.line == 4


# -- refused, naming the line ------------------------------------------------------------------

REFUSED = {
    "unknown opcode": (NEGATE.replace("negate(p)", "negatee(p)"), 4, "unknown opcode negatee"),
    "unknown element type": (NEGATE.replace("f32[3] parameter", "f31[3] parameter"), 3, "element type f31"),
    "constant out of range": (
        NEGATE.replace("ROOT n = f32[3] negate(p)", "ROOT c = s8[] constant(300)"),
        4,
        "range",
    ),
    "constant of the wrong size": (
        "HloModule m\nENTRY e {\n  ROOT c = f32[3] constant({1, 2})\n}\n",
        3,
        "expects 3 elements",
    ),
    "f16 constant past its largest value": (
        "HloModule m\nENTRY e {\n  ROOT c = f16[] constant(70000)\n}\n",
        3,
        "out of range",
    ),
    "two ENTRYs": (NEGATE + NEGATE.replace("HloModule m\n", ""), 6, "only one ENTRY"),
    "two ROOTs": (NEGATE.replace("  p = f32[3]", "  ROOT p = f32[3]"), 4, "only one ROOT"),
    "computation defined twice": (
        "HloModule m\nf {\n  ROOT c = f32[] constant(1)\n}\nf {\n  ROOT c = f32[] constant(1)\n}\n",
        5,
        "defined twice",
    ),
    "instruction defined twice": (NEGATE.replace("ROOT n =", "ROOT p ="), 4, "p is defined twice"),
    "undefined operand": (NEGATE.replace("negate(p)", "negate(q)"), 4, "undefined operand q"),
    "operand cycle": (NEGATE.replace("negate(p)", "add(p, n)"), 4, "undefined operand n"),
    "undefined control-predecessor": (
        NEGATE.replace("negate(p)", "negate(p), control-predecessors={q}"),
        4,
        "undefined control-predecessor q",
    ),
    "computation called before it is defined": (
        "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=f\n}\n"
        "f {\n  ROOT a = f32[] parameter(0)\n}\n",
        4,
        "undefined computation f",
    ),
    "signature contradicting its root": (
        NEGATE.replace("ENTRY e {", "ENTRY e (p: f32[3]) -> f32[4] {"),
        2,
        "not compatible",
    ),
    "input_output_alias outside the result": (
        "HloModule m, input_output_alias={ {5}: (0, {}, may-alias) }\n" + NEGATE.split("\n", 1)[1],
        1,
        "input_output_alias",
    ),
    "input_output_alias without its colon": (
        "HloModule m, input_output_alias={ {0} (0, {}) }\n" + NEGATE.split("\n", 1)[1],
        1,
        "input_output_alias",
    ),
    "buffer_donor malformed": (
        "HloModule m, buffer_donor={ (0 {}) }\n" + NEGATE.split("\n", 1)[1],
        1,
        "buffer_donor",
    ),
    "async-done of a non-async operand": (NEGATE.replace("negate(p)", "add-done(p)"), 4, "async op"),
    "async chain changing its wrapped opcode": (
        ACCEPTED["async shorthand with its wrapped computation"][0].replace("add-done", "multiply-done"),
        7,
        "wrapped opcode",
    ),
    "a shape XLA cannot infer": (NEGATE.replace("p = f32[3] parameter", "p = parameter"), 3, "infer shape"),
    "a duplicated parameter number": (
        NEGATE.replace("ROOT n = f32[3] negate(p)", "q = f32[3] parameter(0)\n  ROOT n = f32[3] add(p, q)"),
        4,
        "parameter number 0",
    ),
    "wrong operand count": (NEGATE.replace("negate(p)", "negate(p, p)"), 4, "expects 1 operands"),
    "unknown header attribute": (NEGATE.replace("HloModule m", "HloModule m, colour=blue"), 1, "colour"),
    "an operand declared with another shape": (NEGATE.replace("negate(p)", "negate(f32[4] p)"), 4, "f32[4]"),
    "a tuple operand declared with another element type": (
        OPERAND_SHAPES.replace("((f32[2,3]{1,0}, s32[]) t)", "((f32[2,3]{1,0}, s64[]) t)"),
        5,
        "s64[]",
    ),
    "an attribute XLA does not know": (
        NEGATE.replace("negate(p)", "negate(p), colour=blue"),
        4,
        "unexpected attribute colour",
    ),
    "iota replica groups without devices": (
        NEGATE.replace("negate(p)", "all-gather(p), dimensions={0}, replica_groups=[2,0]<=[0]"),
        4,
        "iota list",
    ),
    "iota replica groups transposed past their rank": (
        NEGATE.replace("negate(p)", "all-gather(p), dimensions={0}, replica_groups=[2,2]<=[4]T(0,1,2)"),
        4,
        "not a permutation",
    ),
    "a required attribute left out": (NEGATE.replace("negate(p)", "reverse(p)"), 4, "dimensions"),
    "a window pad of three numbers": (
        NEGATE.replace("negate(p)", "reverse(p), dimensions={0}, window={size=1 pad=1_1_0}"),
        4,
        "window",
    ),
    "an async chain changing its thread": (
        ACCEPTED["async-start calling a computation"][0].replace(
            "async-done(s), calls=w", 'async-done(s), async_execution_thread="other"'
        ),
        9,
        "async_execution_thread",
    ),
    "a NaN payload f8e4m3fn cannot hold": (
        "HloModule m\nENTRY e {\n  ROOT c = f8e4m3fn[1] constant({nan(0x1)})\n}\n",
        3,
        "payload",
    ),
    "two instructions where one is read alone": (
        "a = f32[] parameter(0)\nb = f32[] negate(a)\n",
        2,
        "one instruction",
    ),
    "not HLO": ("hello\n", 1, "HloModule"),
    "an unterminated comment": (NEGATE.replace("ROOT", "/* ROOT"), 4, "comment"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_xla_refuses_is_refused_with_its_line(case: str) -> None:
    text, line, message = REFUSED[case]
    with pytest.raises(ParseError) as e:
        parse_hlo(text, "bad.hlo")
    assert e.value.line == line, str(e.value)
    assert message in str(e.value)
    assert str(e.value).startswith(f"bad.hlo:{line}: ")


@pytest.mark.parametrize(
    "text",
    [
        "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT a = f32[] "
        + "negate(" * 200_000
        + "p"
        + ")" * 200_000
        + "\n}\n",
        "HloModule m\nENTRY e {\n  ROOT p = " + "(" * 200_000 + "f32[]" + ")" * 200_000 + " parameter(0)\n}",
        "HloModule m\nENTRY e {\n  ROOT c = f32[1] constant(" + "{" * 200_000 + "}\n",
        "HloModule m, frontend_attributes=" + "{" * 200_000 + "\n",
    ],
    ids=["nested instructions", "nested tuple shapes", "nested literal braces", "nested header braces"],
)
def test_deep_nesting_is_refused_without_overflowing_the_stack(text: str) -> None:
    with pytest.raises(ParseError):
        parse_hlo(text, "deep.hlo")


def test_nesting_at_the_limit_reads_on_a_thread_with_a_small_stack() -> None:
    # The reader runs on its own thread with an ample stack, whatever the caller's thread has.
    text = "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT a = f32[] " + "negate(" * 500
    text += "p" + ")" * 500 + "\n}\n"
    counts: list[int] = []
    previous = threading.stack_size(512 * 1024)
    try:
        thread = threading.Thread(target=lambda: counts.append(parse_hlo(text).instruction_count))
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert counts == [501]


@pytest.mark.parametrize(
    "text",
    [
        "HloModule m\nENTRY e {\n  ROOT p = " + "(" * 500 + "f32[]" + ")" * 500 + " parameter(0)\n}\n",
        "HloModule m\nENTRY e {\n  ROOT c = "
        + "(" * 500
        + "f32[]"
        + ")" * 500
        + (" constant(" + "(" * 500 + "0" + ")" * 500 + ")\n}\n"),
    ],
    ids=["tuple shapes", "tuple literals"],
)
def test_deep_text_read_on_the_callers_thread_first_reads_the_same(text: str) -> None:
    # The reader starts on the caller's thread and moves to its own past a stack budget
    # (rust/src/parse/stack.rs): the module read is the one read on a small stack or a large one.
    def read() -> list[tuple]:
        return [tuple(i) for c in parse_hlo(text).computations for i in c.instructions]

    results: list[list[tuple]] = []
    previous = threading.stack_size(512 * 1024)
    try:
        thread = threading.Thread(target=lambda: results.append(read()))
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert results == [read()]
    assert results[0][0][2].count("(") == 500


def test_line_offset_points_into_a_multi_graph_file() -> None:
    with pytest.raises(ParseError) as e:
        parse_hlo(NEGATE.replace("negate(p)", "negate(q)"), "dump.txt", first_line=101)
    assert e.value.line == 104


def test_messages_quote_the_input_without_control_characters() -> None:
    with pytest.raises(ParseError) as e:
        parse_hlo(NEGATE.replace("  ROOT", "  zz \x1b[31m\n  ROOT"), "bad.hlo")
    assert "\x1b" not in str(e.value) and "zz" in str(e.value)
