"""What tests/test_jax_wild.py and tests/test_jax_wild2.py share: each batch of real JAX pairs
(fixtures/jax/wild*, made by their generate.py) carries the verdict and cause kinds written down
before the engine ran on them; pairs the engine still gets wrong are strict xfails whose reason
says what it answers, so they turn into failures the day they are fixed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from xlagraph.diagnose.residue import ELIDED
from xlagraph.diff import diff_files

# The cause vocabulary of README.md ("Causes").
KINDS = frozenset({
    "output_added", "output_removed", "output_permutation", "parameter_permutation", "parameter_shape",
    "parameter_added", "parameter_removed", "constant_value", "attribute", "collective", "sharding",
    "graph_break", "dynamic_shape", "conditional_work", "state_init", "dtype", "layout", "dead_code",
    "structure",
})  # fmt: skip


def params(pairs: dict[str, Any], wrong: dict[str, str]) -> list:  # type: ignore[type-arg]
    """Every pair, the ones in `wrong` as strict xfails with their reason."""
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=wrong[name]))
        if name in wrong
        else name
        for name in sorted(pairs)
    ]


def files(root: Path, pair: dict[str, Any]) -> tuple[str, str]:
    return str(root / pair["a"]), str(root / pair["b"])


def _undecidable(pair: dict[str, Any], a: str, b: str) -> bool:
    """The dumps print some constant as `{...}` (XLA elides values past 10 elements unless asked to
    print them), read from the files, not from the engine; for programs that differ, the pair's
    author also wrote down that the text cannot show it (a `note` saying "cannot")."""
    elided = any(ELIDED in Path(f).read_text(encoding="utf-8") for f in (a, b))
    return elided and (pair["expected_verdict"] == "identical" or "cannot" in pair.get("note", ""))


def verdict_is_right(pair: dict[str, Any], verdict: str, a: str, b: str) -> bool:
    """The expected verdict; or `undetermined` (no cause, only elided values could differ) where
    the text cannot decide: never `identical` for programs that differ, and no false cause for the
    same program dumped twice."""
    return verdict == pair["expected_verdict"] or (verdict == "undetermined" and _undecidable(pair, a, b))


def check_verdict_and_kinds(root: Path, pair: dict[str, Any]) -> None:
    a, b = files(root, pair)
    result = diff_files(a, b)
    kinds = {c.kind.value for c in result.differences}
    assert verdict_is_right(pair, result.verdict, a, b), (result.verdict, sorted(kinds))
    assert kinds <= set(pair["expected_causes"]), sorted(kinds)
    if result.verdict != "undetermined":
        assert bool(kinds) == (pair["expected_verdict"] == "different")


def check_reverse_verdict(root: Path, pair: dict[str, Any]) -> None:
    a, b = files(root, pair)
    assert verdict_is_right(pair, diff_files(b, a).verdict, b, a)


def check_manifest(pairs: dict[str, Any]) -> None:
    assert 25 <= len(pairs) <= 40
    verdicts = [p["expected_verdict"] for p in pairs.values()]
    assert verdicts.count("identical") >= 5 and verdicts.count("different") >= 20
    for name, pair in pairs.items():
        assert pair["expected_verdict"] in ("identical", "different"), name
        assert set(pair["expected_causes"]) <= KINDS, name
        assert bool(pair["expected_causes"]) == (pair["expected_verdict"] == "different"), name
        assert pair["description"] and pair["form"] in ("lowered", "compiled"), name


def check_size(root: Path, pairs: dict[str, Any]) -> None:
    sizes = [f.stat().st_size for f in root.glob("*/*.hlo")]
    assert len(sizes) == 2 * len(pairs)
    assert max(sizes) < 200_000 and sum(sizes) < 3_000_000
