"""Instructions built when first asked for (`LAZY_IR`, `_core.Instructions`) answer as the tuple
the eager reader builds: every sequence operation, the canonical form, and a diff's answers."""

from __future__ import annotations

import gc
import pickle
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURE_PAIRS, load_pair_side, pair_spec
from xlagraph import _core, api
from xlagraph.canonical import canonicalize
from xlagraph.diff import diff_modules
from xlagraph.ir import callers, has_source_lines, name_at
from xlagraph.parse.hlo import LAZY_IR, parse_hlo
from xlagraph.render.json import diff_to_json as diff_json

SPECS = sorted({spec for pair in FIXTURE_PAIRS for spec in pair})


def _load(spec: str, lazy: bool):  # type: ignore[no-untyped-def]
    return load_pair_side(spec, LAZY_IR, lazy)


def _lazy_modules() -> list[tuple[str, object, object]]:
    out = []
    for spec in SPECS:
        eager, lazy = _load(spec, False), _load(spec, True)
        if lazy.format == "hlo" and isinstance(lazy.entry.instructions, _core.Instructions):
            out.append((spec, eager, lazy))
    return out


@pytest.fixture(scope="module")
def modules() -> list[tuple[str, object, object]]:
    found = _lazy_modules()
    assert len(found) > 20
    return found


def test_every_sequence_operation_answers_as_the_tuple(modules) -> None:  # type: ignore[no-untyped-def]
    for spec, eager, lazy in modules:
        for e, z in zip(eager.computations, lazy.computations, strict=True):
            t, s = e.instructions, z.instructions
            assert isinstance(t, tuple) and isinstance(s, _core.Instructions), spec
            assert len(s) == len(t) and bool(s) == bool(t), spec
            assert s[0] == t[0] and s[-1] == t[-1] and s[len(t) // 2] == t[len(t) // 2], spec
            assert s[0] is s[0], spec  # built once, then kept
            assert tuple(s) == t and list(reversed(s)) == list(reversed(t)), spec
            assert s[1:-1:2] == t[1:-1:2] and s[::-1] == t[::-1] and s[5:2] == (), spec
            assert s == t and t == s and (s != t) is False and s == z.instructions, spec
            assert hash(s) == hash(t) and repr(s) == repr(t), spec
            assert pickle.loads(pickle.dumps(s)) == t, spec
            assert type(pickle.loads(pickle.dumps(s))) is tuple, spec
            assert t[0] in s, spec
            assert list(callers(z)) == list(callers(e)) == [i.name for i in t if i.called], spec
            assert has_source_lines(z) == has_source_lines(e), spec
            assert [name_at(s)(k) for k in range(len(s))] == [i.name for i in t], spec
            with pytest.raises(IndexError):
                s[len(t)]
            with pytest.raises(IndexError):
                s[-len(t) - 1]
            with pytest.raises(TypeError):
                s["x"]  # type: ignore[index]


def test_the_canonical_form_is_the_eager_one(modules) -> None:  # type: ignore[no-untyped-def]
    for spec, eager, lazy in modules:
        assert (lazy.name, lazy.header, lazy.notes, lazy.stack_frames) == (
            eager.name,
            eager.header,
            eager.notes,
            eager.stack_frames,
        ), spec
        ca, cb = canonicalize(eager), canonicalize(lazy)
        assert (ca.fingerprint, ca.order) == (cb.fingerprint, cb.order), spec
        for name, x in ca.computations.items():
            y = cb.computations[name]
            for field in ("operands", "keys", "h0", "h1", "param_number", "outputs", "order", "walk", "dead"):
                assert getattr(x, field) == getattr(y, field), f"{spec} {name}.{field}"
            assert dict(x.computation.by_name) == dict(y.computation.by_name), spec


@pytest.mark.parametrize("batch", range(3))
def test_a_diff_of_lazy_modules_says_what_the_eager_diff_says(batch: int) -> None:
    compared = 0
    for a, b in FIXTURE_PAIRS[batch::3]:
        eager = diff_modules(_load(a, False), _load(b, False))
        lazy = api.diff(pair_spec(a), pair_spec(b))  # reads both sides lazily
        assert diff_json(lazy.result) == diff_json(eager), (a, b)
        compared += 1
    assert compared > 10


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_indices_and_slices_drawn_at_random(data: st.DataObject) -> None:
    spec, eager, lazy = data.draw(st.sampled_from(_MODULES))
    t, s = eager.entry.instructions, lazy.entry.instructions
    n = len(t)
    i = data.draw(st.integers(-n, n - 1))
    assert s[i] == t[i], spec
    bound = st.one_of(st.none(), st.integers(-n - 3, n + 3))
    step = data.draw(st.one_of(st.none(), st.integers(-4, 4).filter(bool)))
    cut = slice(data.draw(bound), data.draw(bound), step)
    assert s[cut] == t[cut], (spec, cut)


_MODULES = _lazy_modules()[:40]


def test_the_text_outlives_its_string() -> None:
    """The records borrow the module's text: the sequence keeps the string that holds it."""
    text = "".join(
        ["HloModule m\n", "ENTRY e {\n  p = f32[4] parameter(0)\n", "  ROOT r = f32[4] negate(p)\n}\n"]
    )
    token = LAZY_IR.set(True)
    try:
        module = parse_hlo(text, "m.hlo")
    finally:
        LAZY_IR.reset(token)
    del text
    gc.collect()
    _ = [("x" * 100) + str(k) for k in range(10_000)]  # reuse freed memory
    assert [i.name for i in module.entry.instructions] == ["p", "r"]
    assert module.entry.root.opcode == "negate" and module.entry.root.operands == ("p",)


def test_threads_see_one_object_per_instruction(modules) -> None:  # type: ignore[no-untyped-def]
    spec, _, lazy = max(modules, key=lambda m: len(m[2].entry.instructions))
    s = lazy.entry.instructions
    seen: list[list[int]] = [[], []]

    def read(k: int) -> None:
        seen[k] = [id(i) for i in s]

    threads = [threading.Thread(target=read, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen[0] == seen[1] == [id(i) for i in s], spec


def test_opcodes_asked_of_the_handle_are_the_instructions(modules) -> None:  # type: ignore[no-untyped-def]
    for spec, eager, lazy in modules:
        for comp in canonicalize(lazy).computations.values():
            if comp.core is None:
                continue
            names = [i.name for i in eager.by_name[comp.name].instructions][::-1]
            assert comp.core.opcodes_of(names) == [comp.instruction(n).opcode for n in names], spec
            with pytest.raises(KeyError):
                comp.core.opcodes_of(["no such instruction"])
