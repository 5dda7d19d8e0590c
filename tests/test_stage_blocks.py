"""A pipeline stage whose split moved over a stack of MLP blocks (issue 37), real JAX dumps
(fixtures/jax/stage_blocks, by its generate.py): one cause, the block both windows hold paired
with itself, the block gained and the one lost called so, no shape change, permutation or
`structure` made of blocks compared across. The torch_xla pairs of the pattern are
fixtures/torch_xla/parallel's pp_middle_stage*, checked by test_parallel_pairs."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES
from xlagraph.diff import diff_files

HERE = FIXTURES / "jax" / "stage_blocks"
EXPECTED = {
    k: v for k, v in json.loads((HERE / "EXPECTED.json").read_text()).items() if not k.startswith("_")
}


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_moved_split_is_one_cause(name: str, reverse: bool) -> None:
    a, b = str(HERE / f"{name}_a.hlo"), str(HERE / f"{name}_b.hlo")
    result = diff_files(b, a) if reverse else diff_files(a, b)
    expect = EXPECTED[name]["expect"]
    kinds = [c.kind.value for c in result.causes]
    assert len(kinds) == 1, [f"{c.kind.value}: {c.summary[:120]}" for c in result.causes]
    assert not set(kinds) & set(expect["kinds_absent"]), kinds
    if not reverse:
        assert kinds == expect["kinds"], kinds
    (cause,) = result.causes
    inputs = {ch.left for ch in cause.changes if ch.what == "input"} | {m.left_name for m in cause.mapping}
    assert not [ch for ch in cause.changes if ch.what == "shape" and ch.left in inputs], "a weight resized"
    if expect["kept"] is None or (reverse and expect["mirror_ambiguous"]):
        return  # which look-alike block is kept: not in the dumps (see generate.py)
    kept = {int(x): int(y) for x, y in expect["kept"].items()}
    if reverse:
        kept = {y: x for x, y in kept.items()}
    called = [ch for ch in cause.changes if ch.what == "input"]
    added = {int(ch.new.split(":")[0]) for ch in called if not ch.left}
    removed = {int(ch.old.split(":")[0]) for ch in called if not ch.right}
    assert not removed & set(kept), f"kept inputs called removed: {sorted(removed & set(kept))}"
    assert not added & set(kept.values()), f"kept inputs called added: {sorted(added & set(kept.values()))}"
    moved = {m.left: m.right for m in cause.mapping if m.what == "input"}
    wrong = {a: (moved[a], b) for a, b in kept.items() if a in moved and moved[a] != b}
    assert not wrong, f"A's input paired with B's (should be): {wrong}"
