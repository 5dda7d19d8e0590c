"""Tuple-shaped entry parameters (rust/src/canon/tuple_params.rs, the oracle's `unwrap`), on real
modules.

Two sets of real modules: those in fixtures/ whose entry takes a tuple parameter (XLA's parser
tests: elements read by get-tuple-element, tuples read whole by a custom call, a nested tuple
passed through), and a sample of the metamorphic corpus with its parameters wrapped in one tuple
as PyTorch/XLA does past 3,200 of them (tests/metamorphic/wrap.py), also nested two deep, read
back through a forwarded `tuple`, and read twice. Wrapping keeps the program and its inputs, so
every metamorphic case must get the very answer it gets unwrapped.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from tests.metamorphic.check import (
    AMBIGUOUS_CASES,
    CASES,
    _module_texts,
    _seed,
    corpus,
    dead_inputs,
    judge,
    output_values,
    run_case,
)
from tests.metamorphic.transforms import NotApplicable, apply, normalize
from tests.metamorphic.wrap import wrap_parameters
from xlagraph.canonical import canonicalize
from xlagraph.diff import diff_modules
from xlagraph.parse.hlo import parse_hlo

_TUPLE_PARAMETER = re.compile(r"= \(.*\) parameter\(\d+\)")
STRIDE = 60  # of the metamorphic corpus (modules of at most 400 instructions, 40 KB)
NESTED = {"depth": 2, "forwarded": True, "duplicate": True}


@cache
def _real() -> tuple[tuple[str, str], ...]:
    """(label, text) of every fixture module whose ENTRY takes a tuple-shaped parameter."""
    out = []
    for label, text in _module_texts(400_000):
        if not _TUPLE_PARAMETER.search(text):
            continue
        try:
            module = parse_hlo(text, label)
        except Exception:
            continue  # the reader's own tests cover modules it refuses
        if any(i.opcode == "parameter" and i.shape.startswith("(") for i in module.entry.instructions):
            out.append((label, text))
    return tuple(out)


def _labels() -> list[str]:
    return [label for label, _ in _real()]


def test_real_modules_found() -> None:
    labels = _labels()
    assert len(labels) >= 8, labels
    assert "xla_conformance/modules/HloParserTest.NestedAliasing.hlo" in labels


@pytest.mark.parametrize("label", _labels())
def test_identical_with_itself(label: str) -> None:
    text = dict(_real())[label]
    result = diff_modules(parse_hlo(text, "a.hlo"), parse_hlo(text, "b.hlo"))
    assert result.causes == (), [c.summary for c in result.causes]


@pytest.mark.parametrize("label", _labels())
def test_no_input_counted_twice(label: str) -> None:
    """Inputs have distinct numbers, and a tuple parameter is an input only where nothing reads
    it by element: never beside its own elements."""
    entry = canonicalize(parse_hlo(dict(_real())[label], label)).entry
    numbers = list(entry.param_number.values())
    assert len(numbers) == len(set(numbers)), entry.param_number
    for name in entry.param_number:
        ins = entry.instruction(name)
        if ins.opcode == "get-tuple-element":
            assert not set(ins.operands) & set(entry.param_number), (name, entry.param_number)


def test_elements_are_the_inputs() -> None:
    """XLA's NestedAliasing: `p = (f32[], f32[])` read as `p0`, `p1` gives two inputs numbered
    by tuple index, and the tuple itself is plumbing."""
    label = "xla_conformance/modules/HloParserTest.NestedAliasing.hlo"
    entry = canonicalize(parse_hlo(dict(_real())[label], label)).entry
    assert entry.param_number == {"p0": 0, "p1": 1}
    assert "p" in entry.plumbing


# (case, module): what the engine answers where the right answer is out of reach today. None
# since the look-alike search: a dropped passthrough output is the one whose removal balances
# the graphs (docs/matching.md).
KNOWN: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("label", _labels())
def test_metamorphic_cases(label: str) -> None:
    """Every transformation and pair of them that applies: named exactly, as on any module. Where
    every output is an input passed through, permutations have no single right answer."""
    try:
        text = normalize(dict(_real())[label])
    except NotApplicable:
        pytest.skip("the transformations cannot read this module")
    entry = canonicalize(parse_hlo(text, label)).entry
    passthrough = all(o in entry.param_number for o in entry.outputs)
    failed, known = [], []
    for names in ((), *CASES):
        if passthrough and AMBIGUOUS_CASES.intersection(names):
            continue
        out = run_case(label, text, names)
        if ("+".join(names), label) in KNOWN:
            known.append((names, out.status))
        elif out.status not in ("pass", "n/a"):
            failed.append(("+".join(names), out.problems, out.kinds))
    assert not failed
    assert all(status == "fail" for _, status in known), known  # fixed: move it out of KNOWN


@cache
def _sample() -> tuple[tuple[str, str], ...]:
    return tuple(corpus(400, 40_000)[::STRIDE])


def _wrapped_outcome(
    label: str, text: str, names: tuple[str, ...], **how: object
) -> tuple[str, tuple[str, ...]]:
    new, exp = apply(text, names, _seed(label, names))
    result = diff_modules(
        parse_hlo(wrap_parameters(text, **how), "a.hlo"), parse_hlo(wrap_parameters(new, **how), "b.hlo")
    )
    # Judged as `run_case` judges the unwrapped module: outputs that compute the same value, and
    # unread look-alike inputs, are interchangeable (wrapping changes neither), so a swap of two
    # equal outputs is no wrong answer here either.
    values, dead = output_values(text), dead_inputs(new)
    problems = judge(result, exp, values, dead, text) if names else [c.summary for c in result.causes]
    return ("fail" if problems else "pass"), tuple(sorted(str(c.kind) for c in result.causes))


@cache
def _plain(label: str, names: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    out = run_case(label, dict(_sample())[label], names)
    return out.status, out.kinds


@pytest.mark.parametrize("how", [{}, NESTED], ids=["wrapped", "nested"])
@pytest.mark.parametrize("index", range(len(_sample())))
def test_wrapping_changes_no_answer(index: int, how: dict[str, object]) -> None:
    label, text = _sample()[index]
    try:
        wrap_parameters(text, **how)
    except NotApplicable as e:
        pytest.skip(str(e))
    differ = []
    for names in ((), *CASES):
        plain = _plain(label, names)
        if plain[0] == "n/a":
            continue
        got = _wrapped_outcome(label, text, names, **how)
        if got != plain:
            differ.append(("+".join(names), plain, got))
    assert not differ


@pytest.mark.parametrize("index", range(len(_sample())))
def test_interface_changes_are_never_identical(index: int) -> None:
    """Wrapping, or nesting one level deeper, changes what the executable takes: never
    `identical`. Reading an element twice, or through a forwarded tuple, changes nothing."""
    _, text = _sample()[index]
    try:
        flat, wrapped, deeper = text, wrap_parameters(text), wrap_parameters(text, depth=2)
    except NotApplicable as e:
        pytest.skip(str(e))
    twice = wrap_parameters(text, forwarded=True, duplicate=True)

    def same(a: str, b: str) -> bool:
        result = diff_modules(parse_hlo(a, "a.hlo"), parse_hlo(b, "b.hlo"))
        if result.causes:
            return False
        assert result.verdict != "different"
        return True

    assert not same(flat, wrapped)
    assert not same(wrapped, deeper)
    assert same(wrapped, twice)
