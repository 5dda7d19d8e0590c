"""A `call` and its inlined body are one program (issue 37): XLA's CallInliner inlines every
`call` it may before compiling, and the reader does the same (rust/src/canon/inline.rs).

Metamorphic: every real module of the corpus (tests/metamorphic/check.py's) with a `call` in its
entry, its calls inlined in the text by a transformation written apart from the engine's
(tests/metamorphic/inline.py), must diff `identical` both ways. And a change inside a callee is
still found, named and located at the user's line, and what XLA leaves a call stays one.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.metamorphic.check import corpus
from tests.metamorphic.inline import inline_entry_calls
from tests.metamorphic.transforms import NotApplicable
from xlagraph.diff import diff_files
from xlagraph.parse.hlo import parse_hlo

NESTED = FIXTURES / "jax" / "wild2" / "nested_jit_inline"
WHERE = FIXTURES / "jax" / "wild2" / "where_vs_select"
MAX_BYTES = 40_000


@cache
def _pairs() -> tuple[tuple[str, str, str], ...]:
    """(label, module, its calls inlined) for each module the transformation takes, in files of
    at most `MAX_BYTES` (test_metamorphic.py's bound)."""
    out = []
    for label, text in corpus(max_bytes=MAX_BYTES):
        if " call(" not in text:
            continue
        try:
            out.append((label, text, inline_entry_calls(text)))
        except NotApplicable:
            continue
    return tuple(out)


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


CASES = 120  # indices, so that collecting the tests reads no fixture


def test_enough_modules_have_calls() -> None:
    """Enough modules with calls, and none past the indices tested."""
    assert 50 <= len(_pairs()) <= CASES, len(_pairs())


@pytest.mark.parametrize("index", range(CASES))
def test_inlined_calls_are_identical(tmp_path: Path, index: int) -> None:
    """Every module the transformation takes (about 100): those past the last index are skipped."""
    if index >= len(_pairs()):
        pytest.skip("no module of that index")
    label, text, inlined = _pairs()[index]
    a, b = _write(tmp_path, "a.hlo", text), _write(tmp_path, "b.hlo", inlined)
    # What the module diffed with itself says: `identical`, or `undetermined` where the dump
    # elides constants (`{...}`) and so cannot show them the same.
    itself = diff_files(a, a).verdict
    assert itself in ("identical", "undetermined"), label
    for x, y in ((a, b), (b, a)):
        result = diff_files(x, y)
        assert (result.verdict, result.differences) == (itself, ()), (label, result.verdict)


def test_change_inside_callee_found_and_located(tmp_path: Path) -> None:
    """A constant changed inside the called computation: found as what it is, named as the dump
    names it, and located at its line of the dump and its user's source line."""
    text = (NESTED / "a.hlo").read_text()
    changed = text.replace("constant(0.044715)", "constant(0.05)")
    assert changed != text
    a, b = _write(tmp_path, "a.hlo", text), _write(tmp_path, "b.hlo", changed)
    result = diff_files(a, b)
    assert result.verdict == "different"
    kinds = {c.kind.value for c in result.differences}
    assert kinds == {"constant_value"}, kinds
    named = {n for c in result.differences for n in (*c.left, *(ch.left for ch in c.changes))}
    assert "constant.9" in named, named
    # Against the inlined program (B's form), the same change is the same cause.
    inlined = (NESTED / "b.hlo").read_text().replace("constant(0.044715)", "constant(0.05)")
    result = diff_files(a, _write(tmp_path, "c.hlo", inlined))
    assert {c.kind.value for c in result.differences} == {"constant_value"}


def test_call_xla_keeps_stays_a_call() -> None:
    """The reader's IR keeps the text's calls (XLA's counts); the program beside it has them
    inlined, but for a call with a backend config, or whose `inlineable` frontend attribute is
    false: XLA's CallInliner leaves those, and so there is no inlined program."""
    text = (WHERE / "a.hlo").read_text()
    for attribute in ('backend_config="x"', 'frontend_attributes={inlineable="false"}'):
        kept = text.replace("to_apply=_where.1", f"to_apply=_where.1, {attribute}")
        assert parse_hlo(kept).inlined is None, attribute
    module = parse_hlo(text)
    assert [c.name for c in module.computations] == ["_where.1", "main.2"]
    assert module.inlined is not None
    assert [c.name for c in module.inlined.computations] == ["main.2"]
    (entry,) = module.inlined.computations
    assert "call" not in {i.opcode for i in entry.instructions}
    select = entry.by_name["select_n.1"]
    assert select.operands == ("gt.1", "x.1", "y.1") and select.line == 7


def test_callee_called_twice_and_tuple_root(tmp_path: Path) -> None:
    """Each call site gets its own copy; a callee returning a tuple is read through its
    get-tuple-elements."""
    text = (WHERE / "a.hlo").read_text()
    twice = text.replace(
        "ROOT select_n.1 = f32[8,8]{1,0} select(Arg_0.1, Arg_1.1, Arg_2.1)",
        "select_n.1 = f32[8,8]{1,0} select(Arg_0.1, Arg_1.1, Arg_2.1)\n"
        "  ROOT t.1 = (f32[8,8]{1,0}) tuple(select_n.1)",
    ).replace(
        "  jit__where_.1 = f32[8,8]{1,0} call(gt.1, x.1, y.1), to_apply=_where.1\n",
        "  c.1 = (f32[8,8]{1,0}) call(gt.1, x.1, y.1), to_apply=_where.1\n"
        "  c.2 = (f32[8,8]{1,0}) call(gt.1, x.1, y.1), to_apply=_where.1\n"
        "  g.1 = f32[8,8]{1,0} get-tuple-element(c.1), index=0\n"
        "  g.2 = f32[8,8]{1,0} get-tuple-element(c.2), index=0\n"
        "  jit__where_.1 = f32[8,8]{1,0} add(g.1, g.2)\n",
    )
    inlined = parse_hlo(twice).inlined
    assert inlined is not None
    (entry,) = inlined.computations
    names = [i.name for i in entry.instructions]
    assert names.count("select_n.1") == 1 and "select_n.1.1" in names, names
    plain = text.replace(
        "  jit__where_.1 = f32[8,8]{1,0} call(gt.1, x.1, y.1), to_apply=_where.1\n",
        "  s.1 = f32[8,8]{1,0} select(gt.1, x.1, y.1)\n"
        "  s.2 = f32[8,8]{1,0} select(gt.1, x.1, y.1)\n"
        "  jit__where_.1 = f32[8,8]{1,0} add(s.1, s.2)\n",
    )
    result = diff_files(_write(tmp_path, "a.hlo", twice), _write(tmp_path, "b.hlo", plain))
    assert result.verdict == "identical"
